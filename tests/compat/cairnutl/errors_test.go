package cairnutl

import (
	"os"
	"path/filepath"
	"testing"
)

// corrupt returns a copy of file with one byte of the db flipped, so the
// trailing sha256 no longer matches.
func corrupt(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	p := filepath.Join(t.TempDir(), "corrupt.db")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRestoreErrorsMatchEtcdutl(t *testing.T) {
	s := fixture(t)
	ms := members(t, 2)
	notEmpty := t.TempDir()
	if err := os.WriteFile(filepath.Join(notEmpty, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		file  string
		flags []string
	}{
		{"corrupted snapshot", corrupt(t, s.snapPath), nil},
		{"db without hash", s.dbPath, nil},
		{"missing file", "/nonexistent/snapshot.db", nil},
		{"bump without mark", s.snapPath, []string{"--bump-revision", "5"}},
		{"mark without bump", s.snapPath, []string{"--mark-compacted"}},
		{"unknown name", s.snapPath, []string{"--name", "nobody"}},
		{"advertise mismatch", s.snapPath, []string{"--initial-advertise-peer-urls", "http://127.0.0.1:1"}},
		{"bad url", s.snapPath, []string{"--initial-advertise-peer-urls", "ftp://x:1"}},
		{"url with path", s.snapPath, []string{"--initial-cluster", "m0=http://127.0.0.1:1/p"}},
		{"duplicate url", s.snapPath, []string{"--initial-cluster", "m0=" + ms[0].peerURL + ",m1=" + ms[0].peerURL}},
		{"data dir not empty", s.snapPath, []string{"--data-dir", notEmpty}},
		{"wal dir exists", s.snapPath, []string{"--wal-dir", notEmpty}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sameRun(t, func(string) []string {
				r := restored{dataDir: filepath.Join(t.TempDir(), "data")}
				r.walDir = filepath.Join(r.dataDir, "member", "wal")
				return restoreArgs(c.file, ms[0], ms, r, c.flags)
			})
		})
	}
	same(t, "snapshot", "restore")
}

// TestCorruptedSnapshotLeavesDataDirAsEtcdutl checks that a failed hash
// check leaves what etcdutl leaves (the copied db), so a retry behaves alike.
func TestCorruptedSnapshotLeavesDataDirAsEtcdutl(t *testing.T) {
	s := fixture(t)
	ms := members(t, 1)
	bad := corrupt(t, s.snapPath)
	dirs := map[string]string{"etcdutl": filepath.Join(t.TempDir(), "d"), "cairnutl": filepath.Join(t.TempDir(), "d")}
	sameRun(t, func(tool string) []string {
		return restoreArgs(bad, ms[0], ms, restored{dataDir: dirs[tool], walDir: filepath.Join(dirs[tool], "member", "wal")}, nil)
	})
	if a, b := dirFiles(t, dirs["etcdutl"]), dirFiles(t, dirs["cairnutl"]); !sameKeys(a, b) {
		t.Fatalf("after a failed restore: etcdutl left %v, cairnutl %v", a, b)
	}
}
