package cairnutl

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// restoreCase is one `snapshot restore` invocation.
type restoreCase struct {
	name   string
	from   func(s *source) string
	flags  []string
	ms     []member // the --initial-cluster; the first is restored
	walDir bool     // use --wal-dir outside the data dir
}

// restored is where one tool put a restore.
type restored struct{ dataDir, walDir string }

func (r restored) db() string { return filepath.Join(r.dataDir, "member", "snap", "db") }

// restoreArgs builds the arguments restoring member m of ms into r.
func restoreArgs(file string, m member, ms []member, r restored, extra []string) []string {
	args := []string{"snapshot", "restore", file, "--data-dir", r.dataDir,
		"--name", m.name, "--initial-cluster", initialCluster(ms),
		"--initial-cluster-token", "cairnutl-compat", "--initial-advertise-peer-urls", m.peerURL}
	if r.walDir != filepath.Join(r.dataDir, "member", "wal") {
		args = append(args, "--wal-dir", r.walDir)
	}
	return append(args, extra...)
}

// restoreBoth restores member m of ms with both tools from copies of file.
func restoreBoth(t *testing.T, file string, m member, ms []member, extra []string, walDir bool) (etcd, cairn restored) {
	t.Helper()
	dirs := map[string]restored{}
	for _, tool := range []string{"etcdutl", "cairnutl"} {
		base := t.TempDir()
		r := restored{dataDir: filepath.Join(base, "data")}
		r.walDir = filepath.Join(r.dataDir, "member", "wal")
		if walDir {
			r.walDir = filepath.Join(base, "wal")
		}
		dirs[tool] = r
	}
	input := map[string]string{"etcdutl": copyTo(t, file), "cairnutl": copyTo(t, file)}
	e, c := sameRun(t, func(tool string) []string { return restoreArgs(input[tool], m, ms, dirs[tool], extra) })
	if e.code != 0 || c.code != 0 {
		t.Fatalf("restore failed: etcdutl %d %s; cairnutl %d %s", e.code, e.stderr, c.code, c.stderr)
	}
	return dirs["etcdutl"], dirs["cairnutl"]
}

func members(t *testing.T, n int) []member {
	ms := make([]member, n)
	for i := range ms {
		ms[i] = member{name: fmt.Sprintf("m%d", i), peerURL: peerURL(t)}
	}
	return ms
}

func TestRestoreFilesMatchEtcdutl(t *testing.T) {
	s := fixture(t)
	snapshot := func(s *source) string { return s.snapPath }
	cases := []restoreCase{
		{name: "one member", from: snapshot, ms: members(t, 1)},
		{name: "wal dir", from: snapshot, ms: members(t, 1), walDir: true},
		{name: "bump revision", from: snapshot, ms: members(t, 1), flags: []string{"--bump-revision", "1000", "--mark-compacted"}},
		{name: "db from data dir", from: func(s *source) string { return s.dbPath }, ms: members(t, 1), flags: []string{"--skip-hash-check"}},
		{name: "skip hash check of snapshot", from: snapshot, ms: members(t, 1), flags: []string{"--skip-hash-check"}},
		{name: "three members", from: snapshot, ms: members(t, 3)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, m := range c.ms {
				e, cr := restoreBoth(t, c.from(s), m, c.ms, c.flags, c.walDir)
				compareRestores(t, e, cr, len(c.ms))
			}
		})
	}
}

func compareRestores(t *testing.T, e, c restored, members int) {
	t.Helper()
	if a, b := dirFiles(t, e.dataDir), dirFiles(t, c.dataDir); !sameKeys(a, b) {
		t.Errorf("data dir files: etcdutl %v, cairnutl %v", a, b)
	}
	compareDBs(t, e.db(), c.db())
	compareWALs(t, e.walDir, c.walDir)
	compareSnaps(t, filepath.Join(e.dataDir, "member", "snap"), filepath.Join(c.dataDir, "member", "snap"), members)
}

// sameKeys compares file lists and modes, ignoring the db's size.
func sameKeys(a, b map[string]os.FileMode) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
