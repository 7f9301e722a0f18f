package cairnutl

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/tests/harness"
)

// fixtureDir holds the files the fixture makes once for every test.
var fixtureDir string

// source is what the fixture made: a snapshot taken through the official
// client from a real etcd holding a fixed workload, that etcd's own db
// (copied after it stopped: no trailing hash) and the data it held.
type source struct {
	snapPath string
	dbPath   string
	rev      int64
	kvs      map[string]string
}

var (
	srcOnce sync.Once
	src     *source
	srcErr  error
)

// fixture returns the shared source, making it on first use.
func fixture(t *testing.T) *source {
	t.Helper()
	srcOnce.Do(func() { src, srcErr = makeSource(t) })
	if srcErr != nil {
		t.Fatal(srcErr)
	}
	return src
}

func makeSource(t *testing.T) (*source, error) {
	m := member{name: "src", peerURL: peerURL(t), dataDir: filepath.Join(fixtureDir, "src-data")}
	s := startServer(t, "etcd", etcdBin, m, []member{m})
	cli := s.client(t)
	out := &source{snapPath: filepath.Join(fixtureDir, "src.snapshot"), dbPath: filepath.Join(fixtureDir, "src.db")}
	if err := workload(t, cli); err != nil {
		return nil, err
	}
	kvs, rev, err := readAll(t, cli)
	if err != nil {
		return nil, err
	}
	out.kvs, out.rev = kvs, rev
	if err := saveSnapshot(t, cli, out.snapPath); err != nil {
		return nil, err
	}
	if err := s.stop(); err != nil {
		return nil, err
	}
	return out, copyFile(filepath.Join(m.dataDir, "member", "snap", "db"), out.dbPath)
}

// workload writes a fixed history: puts, overwrites, deletes, a lease with
// keys, a transaction and a compaction.
func workload(t *testing.T, cli *clientv3.Client) error {
	c := ctx(t)
	for i := range 40 {
		if _, err := cli.Put(c, fmt.Sprintf("key/%03d", i), strings.Repeat("v", i+1)); err != nil {
			return err
		}
	}
	for i := 0; i < 40; i += 3 {
		if _, err := cli.Put(c, fmt.Sprintf("key/%03d", i), fmt.Sprintf("second-%d", i)); err != nil {
			return err
		}
	}
	if _, err := cli.Delete(c, "key/01", clientv3.WithPrefix()); err != nil {
		return err
	}
	lease, err := cli.Grant(c, 3600)
	if err != nil {
		return err
	}
	if _, err := cli.Put(c, "leased", "x", clientv3.WithLease(lease.ID)); err != nil {
		return err
	}
	if _, err := cli.Txn(c).Then(clientv3.OpPut("txn/a", "1"), clientv3.OpPut("txn/b", "2"), clientv3.OpDelete("key/002")).Commit(); err != nil {
		return err
	}
	if _, err := cli.Compact(c, 30, clientv3.WithCompactPhysical()); err != nil {
		return err
	}
	_, err = cli.Put(c, "last", "write")
	return err
}

// readAll returns every key and value and the store revision.
func readAll(t *testing.T, cli *clientv3.Client) (map[string]string, int64, error) {
	resp, err := cli.Get(ctx(t), "", clientv3.WithFromKey())
	if err != nil {
		return nil, 0, err
	}
	kvs := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		kvs[string(kv.Key)] = string(kv.Value)
	}
	return kvs, resp.Header.Revision, nil
}

// saveSnapshot streams Maintenance.Snapshot (db plus trailing sha256) to path.
func saveSnapshot(t *testing.T, cli *clientv3.Client, path string) error {
	rc, err := cli.Snapshot(ctx(t))
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}

// copyTo copies the file at from into a fresh temp dir and returns the copy.
func copyTo(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), filepath.Base(from))
	if err := copyFile(from, to); err != nil {
		t.Fatal(err)
	}
	return to
}

// result is one tool run.
type result struct {
	stdout, stderr string
	code           int
}

// errorLines keeps the "Error:" lines of stderr (the rest is logging).
func (r result) errorLines() string {
	var out []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "Error:") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func run(t *testing.T, bin string, args ...string) result {
	t.Helper()
	r, err := harness.Tool{}.Run(bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Exit}
}

// sameRun runs etcdutl and cairnutl with the same arguments (args builds
// them for each tool, so each can work on its own copy of the files) and
// requires the same stdout, error lines and exit code.
func sameRun(t *testing.T, args func(tool string) []string) (etcd, cairn result) {
	t.Helper()
	etcd = run(t, etcdutlBin, args("etcdutl")...)
	cairn = run(t, cairnutlBin, args("cairnutl")...)
	if etcd.stdout != cairn.stdout || etcd.code != cairn.code || etcd.errorLines() != cairn.errorLines() {
		t.Errorf("%v:\netcdutl (exit %d):\n%s%s\ncairnutl (exit %d):\n%s%s", args("cairnutl"),
			etcd.code, etcd.stdout, etcd.errorLines(), cairn.code, cairn.stdout, cairn.errorLines())
	}
	return etcd, cairn
}

// same is sameRun with identical arguments.
func same(t *testing.T, args ...string) (etcd, cairn result) {
	t.Helper()
	return sameRun(t, func(string) []string { return args })
}
