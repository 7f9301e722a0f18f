package cairnutl

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/membership/v2store"
	"github.com/cairnkv/cairn/server/snap"
)

// dumpDB returns every bucket of the bbolt file at path as bucket => key => value.
func dumpDB(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]map[string]string{}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			kv := map[string]string{}
			out[string(name)] = kv
			return b.ForEach(func(k, v []byte) error {
				kv[string(k)] = string(v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func compareDBs(t *testing.T, etcdPath, cairnPath string) {
	t.Helper()
	a, b := dumpDB(t, etcdPath), dumpDB(t, cairnPath)
	for name := range union(a, b) {
		for k := range union(a[name], b[name]) {
			va, oka := a[name][k]
			vb, okb := b[name][k]
			if oka != okb || va != vb {
				t.Errorf("db bucket %q key %q: etcdutl %v %q, cairnutl %v %q", name, k, oka, va, okb, vb)
			}
		}
		if (a[name] == nil) != (b[name] == nil) {
			t.Errorf("db bucket %q: in etcdutl's %v, in cairnutl's %v", name, a[name] != nil, b[name] != nil)
		}
	}
}

func union[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// dirFiles lists the regular files under dir (relative paths) with modes.
func dirFiles(t *testing.T, dir string) map[string]os.FileMode {
	t.Helper()
	out := map[string]os.FileMode{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = info.Mode()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// compareWALs requires byte-identical WAL segments.
func compareWALs(t *testing.T, etcdDir, cairnDir string) {
	t.Helper()
	a, b := dirFiles(t, etcdDir), dirFiles(t, cairnDir)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("wal dirs differ: etcdutl %v, cairnutl %v", a, b)
	}
	for name, mode := range a {
		if mode.IsDir() {
			continue
		}
		x, _ := os.ReadFile(filepath.Join(etcdDir, name))
		y, _ := os.ReadFile(filepath.Join(cairnDir, name))
		if !bytes.Equal(x, y) {
			t.Errorf("wal file %s differs (first difference at byte %d)", name, firstDiff(x, y))
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// compareSnaps compares the .snap files: same names, same metadata, the
// same membership in the payload, and identical bytes when the payload is
// deterministic (etcd writes the members of a multi-member cluster in map
// order, which changes the v2 store's indexes).
func compareSnaps(t *testing.T, etcdDir, cairnDir string, members int) {
	t.Helper()
	names := snapNames(t, etcdDir)
	if got := snapNames(t, cairnDir); !reflect.DeepEqual(names, got) {
		t.Fatalf(".snap files: etcdutl %v, cairnutl %v", names, got)
	}
	for _, n := range names {
		a, err := snap.Read(filepath.Join(etcdDir, n))
		if err != nil {
			t.Fatal(err)
		}
		b, err := snap.Read(filepath.Join(cairnDir, n))
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(a.GetMetadata(), b.GetMetadata()) {
			t.Errorf("%s metadata: etcdutl %v, cairnutl %v", n, a.GetMetadata(), b.GetMetadata())
		}
		if got, want := payloadMembers(t, b.GetData()), payloadMembers(t, a.GetData()); got != want {
			t.Errorf("%s membership: etcdutl %s, cairnutl %s", n, want, got)
		}
		if members == 1 && !bytes.Equal(a.GetData(), b.GetData()) {
			t.Errorf("%s payload:\netcdutl  %s\ncairnutl %s", n, a.GetData(), b.GetData())
		}
	}
}

func snapNames(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.snap"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	sort.Strings(m)
	return m
}

func payloadMembers(t *testing.T, data []byte) string {
	t.Helper()
	st, err := v2store.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	ms := st.Members()
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	return fmt.Sprintf("members %+v removed %v version %q", ms, st.Removed(), st.ClusterVersion())
}
