package diskformat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// written is a data dir after the standard workload, and what the server
// answered about it before it stopped.
type written struct {
	m     *member
	state state
}

// writeStandard runs the standard workload with each kind on its own fresh
// data dir and stops the servers with SIGTERM.
func writeStandard(t *testing.T, kinds ...kind) map[kind]written {
	t.Helper()
	out := map[kind]written{}
	var first *member
	for _, k := range kinds {
		m := newMember(t, workloadFlags...)
		if first == nil {
			first = m
		} else {
			// The same URLs, so that member attributes are the same too.
			m.clientURL, m.peerURL = first.clientURL, first.peerURL
		}
		m.start(k)
		cli := m.client()
		cr := workload(t, cli, "w/", false)
		s := capture(t, m, cli, cr)
		cli.Close()
		m.stop(syscall.SIGTERM)
		out[k] = written{m, s}
	}
	return out
}

var (
	walName  = regexp.MustCompile(`^[0-9a-f]{16}-[0-9a-f]{16}\.wal$`)
	snapName = regexp.MustCompile(`^[0-9a-f]{16}-[0-9a-f]{16}\.snap$`)
)

// TestFilesMatchEtcd writes the same workload with etcd and with cairn and
// compares what lands on disk: file names, etcdutl's view of the db, and the
// bbolt buckets and keys.
func TestFilesMatchEtcd(t *testing.T) {
	t.Parallel()
	w := writeStandard(t, etcd, cairn)
	e, c := w[etcd], w[cairn]
	sameState(t, "cairn's answers vs etcd's for the same workload", e.state, c.state, true)

	t.Run("wal names", func(t *testing.T) {
		ew, cw := listFiles(t, e.m.walDir(), ""), listFiles(t, c.m.walDir(), "")
		for _, n := range cw {
			if filepath.Ext(n) == ".wal" && !walName.MatchString(n) {
				t.Errorf("cairn WAL file %q is not named <seq %%016x>-<index %%016x>.wal", n)
			}
		}
		if !slices.Contains(cw, "0000000000000000-0000000000000000.wal") {
			t.Errorf("cairn's wal dir %v has no first segment 0000000000000000-0000000000000000.wal", cw)
		}
		if !reflect.DeepEqual(ew, cw) {
			t.Errorf("wal dir: cairn has %v, etcd has %v", cw, ew)
		}
		for _, n := range ew {
			if filepath.Ext(n) != ".wal" {
				continue
			}
			es, cs := fileSize(t, filepath.Join(e.m.walDir(), n)), fileSize(t, filepath.Join(c.m.walDir(), n))
			if es != cs {
				t.Errorf("WAL %s: cairn's is %d bytes, etcd's %d", n, cs, es)
			}
		}
	})

	t.Run("snap names", func(t *testing.T) {
		es, cs := listFiles(t, e.m.snapDir(), ".snap"), listFiles(t, c.m.snapDir(), ".snap")
		if len(cs) == 0 {
			t.Fatalf("cairn wrote no .snap files")
		}
		for _, n := range cs {
			if !snapName.MatchString(n) {
				t.Errorf("cairn snap file %q is not named <term %%016x>-<index %%016x>.snap", n)
			}
		}
		if !reflect.DeepEqual(es, cs) {
			// Names carry raft term and index, which differ legitimately if
			// the two servers need a different number of raft entries.
			t.Logf("DIFFERENCE snap files: cairn has %v, etcd has %v", cs, es)
		}
		for _, n := range cs {
			if !slices.Contains(es, n) {
				continue
			}
			ef, cf := readSnap(t, filepath.Join(e.m.snapDir(), n)), readSnap(t, filepath.Join(c.m.snapDir(), n))
			if ef.Meta != cf.Meta {
				t.Errorf("%s: snapshot metadata: cairn {%s}, etcd {%s}", n, cf.Meta, ef.Meta)
			}
			if !bytes.Equal(ef.Data, cf.Data) {
				// etcd v3.7 still stores its v2 store (membership,
				// cluster version) as JSON in every .snap.
				t.Errorf("%s: snapshot payload: cairn %d bytes %s, etcd %d bytes %s", n, len(cf.Data), head(cf.Data), len(ef.Data), head(ef.Data))
			}
		}
		eo, co := listFiles(t, e.m.snapDir(), ""), listFiles(t, c.m.snapDir(), "")
		if slices.Contains(eo, "db") != slices.Contains(co, "db") {
			t.Errorf("snap dir: cairn has %v, etcd has %v", co, eo)
		}
	})

	t.Run("etcdutl hashkv", func(t *testing.T) {
		eh := etcdutlJSON(t, "hashkv", e.m.dbPath())
		ch := etcdutlJSON(t, "hashkv", c.m.dbPath())
		if !reflect.DeepEqual(eh, ch) {
			t.Errorf("etcdutl hashkv: on cairn's db %v, on etcd's %v", ch, eh)
		}
		want := map[string]any{"hash": float64(e.state.Hash), "hashRevision": float64(e.state.HashRev), "compactRevision": float64(e.state.HashCompactRev)}
		if !reflect.DeepEqual(ch, want) {
			t.Errorf("etcdutl hashkv on cairn's db = %v, want what the HashKV RPC said: %v", ch, want)
		}
	})

	t.Run("etcdutl snapshot status", func(t *testing.T) {
		es := etcdutlJSON(t, "snapshot", "status", e.m.dbPath())
		cs := etcdutlJSON(t, "snapshot", "status", c.m.dbPath())
		for _, f := range []string{"revision", "version"} {
			if !reflect.DeepEqual(es[f], cs[f]) {
				t.Errorf("etcdutl snapshot status: %s = %v on cairn's db, %v on etcd's", f, cs[f], es[f])
			}
		}
		if es["revision"] != float64(e.state.Rev) {
			t.Errorf("etcdutl snapshot status revision on etcd's db = %v, want %d", es["revision"], e.state.Rev)
		}
		for _, f := range []string{"hash", "totalKey", "totalSize"} {
			if !reflect.DeepEqual(es[f], cs[f]) {
				// hash covers every bucket including meta's consistent
				// index; totalSize is bbolt's file size.
				t.Logf("DIFFERENCE etcdutl snapshot status %s: cairn %v, etcd %v", f, cs[f], es[f])
			}
		}
	})

	t.Run("wal records", func(t *testing.T) {
		compareWALs(t, walSummary(t, "etcd", readWAL(t, e.m.walDir())), walSummary(t, "cairn", readWAL(t, c.m.walDir())))
	})

	t.Run("bbolt schema", func(t *testing.T) {
		compareDBs(t, dumpDB(t, e.m.dbPath()), dumpDB(t, c.m.dbPath()))
	})
}

func head(b []byte) string {
	if len(b) > 100 {
		return fmt.Sprintf("%q...", b[:100])
	}
	return fmt.Sprintf("%q", b)
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// etcdutlJSON runs the real etcdutl with -w json and decodes its answer.
func etcdutlJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	cmd := exec.Command(etcdutlBin, append(args, "-w", "json")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("etcdutl %v: %v\n%s%s", args, err, out, stderr.Bytes())
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("etcdutl %v: output %q is not a JSON object: %v", args, out, err)
	}
	return m
}

// dumpDB reads every top-level bucket of a bbolt file: bucket -> key -> value.
func dumpDB(t *testing.T, path string) map[string]map[string][]byte {
	t.Helper()
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer db.Close()
	out := map[string]map[string][]byte{}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			kv := map[string][]byte{}
			out[string(name)] = kv
			return b.ForEach(func(k, v []byte) error {
				if v == nil {
					return fmt.Errorf("bucket %q: nested bucket %q", name, k)
				}
				kv[string(k)] = bytes.Clone(v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return out
}

// strictValues are non-key-bucket entries whose bytes depend only on the
// workload and the release, so they must be equal.
var strictValues = map[[2]string]bool{
	{"meta", "storageVersion"}:      true,
	{"meta", "scheduledCompactRev"}: true,
	{"meta", "finishedCompactRev"}:  true,
	{"cluster", "clusterVersion"}:   true,
}

// compareDBs fails on buckets or keys that etcd has and cairn lacks (or the
// reverse), on any difference in the key bucket, and on encoding differences
// elsewhere; value differences that can be legitimate (consistent index,
// term, ...) are logged as DIFFERENCE.
func compareDBs(t *testing.T, e, c map[string]map[string][]byte) {
	for _, b := range sortedKeys(e) {
		cb, ok := c[b]
		if !ok {
			t.Errorf("bucket %q: etcd has it (%d keys), cairn's db does not", b, len(e[b]))
			continue
		}
		eb := e[b]
		for _, k := range sortedKeys(eb) {
			cv, ok := cb[k]
			ev := eb[k]
			switch {
			case !ok:
				t.Errorf("bucket %q: etcd has key %q (value %q), cairn does not", b, k, ev)
			case bytes.Equal(ev, cv):
			case b == "key" || strictValues[[2]string{b, k}]:
				t.Errorf("bucket %q key %q: cairn's value %q, etcd's %q", b, k, cv, ev)
			default:
				if msg := encodingDiff(ev, cv); msg != "" {
					t.Errorf("bucket %q key %q: encoding differs (%s): cairn %q, etcd %q", b, k, msg, cv, ev)
				} else {
					t.Logf("DIFFERENCE bucket %q key %q: cairn %q, etcd %q", b, k, cv, ev)
				}
			}
		}
		for _, k := range sortedKeys(cb) {
			if _, ok := eb[k]; !ok {
				t.Errorf("bucket %q: cairn has key %q (value %q), etcd does not", b, k, cb[k])
			}
		}
	}
	for _, b := range sortedKeys(c) {
		if _, ok := e[b]; !ok {
			t.Errorf("bucket %q: cairn has it (%d keys), etcd's db does not", b, len(c[b]))
		}
	}
}

// encodingDiff tells why two values of the same entry cannot be the same
// encoding: JSON objects with different field names, JSON vs not JSON, or
// different lengths of binary values. "" means they plausibly are.
func encodingDiff(e, c []byte) string {
	var ej, cj map[string]any
	eIs, cIs := json.Unmarshal(e, &ej) == nil, json.Unmarshal(c, &cj) == nil
	switch {
	case eIs != cIs:
		return "JSON in one db only"
	case eIs:
		if ek, ck := sortedKeys(ej), sortedKeys(cj); !reflect.DeepEqual(ek, ck) {
			return fmt.Sprintf("JSON fields %v vs etcd's %v", ck, ek)
		}
		return ""
	case len(e) != len(c):
		return fmt.Sprintf("%d bytes vs etcd's %d", len(c), len(e))
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
