package cairnutl

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// dataDirWith makes a data dir whose db is a copy of db.
func dataDirWith(t *testing.T, db string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	snapDir := filepath.Join(dir, "member", "snap")
	if err := os.MkdirAll(snapDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(db, filepath.Join(snapDir, "db")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestHashKVMatchesEtcdutl(t *testing.T) {
	s := fixture(t)
	for _, rev := range []int64{0, 29, 30, 31, s.rev, s.rev + 1} {
		for _, w := range formats {
			sameRun(t, func(string) []string {
				return []string{"hashkv", copyTo(t, s.dbPath), "--rev", fmt.Sprint(rev), "-w", w}
			})
		}
	}
	same(t, "hashkv")
	same(t, "hashkv", "/nonexistent/db")
}

func TestDefragMatchesEtcdutl(t *testing.T) {
	s := fixture(t)
	dirs := map[string]string{"etcdutl": dataDirWith(t, s.dbPath), "cairnutl": dataDirWith(t, s.dbPath)}
	sameRun(t, func(tool string) []string { return []string{"defrag", "--data-dir", dirs[tool]} })
	e, c := filepath.Join(dirs["etcdutl"], "member", "snap", "db"), filepath.Join(dirs["cairnutl"], "member", "snap", "db")
	compareDBs(t, e, c)
	same(t, "snapshot", "status", c, "-w", "json")
	ei, _ := os.Stat(e)
	ci, _ := os.Stat(c)
	if ci.Size() > ei.Size() {
		t.Errorf("defragmented db: cairnutl's %d bytes, etcdutl's %d", ci.Size(), ei.Size())
	}
	same(t, "defrag", "--data-dir", t.TempDir())
}
