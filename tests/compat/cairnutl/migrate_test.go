package cairnutl

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// copyDataDir copies the fixture's whole data dir (db, WAL, snap files).
func copyDataDir(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "data")
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		}
		return copyFile(p, filepath.Join(to, rel))
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// storageVersionOf reads the meta bucket's storageVersion ("" if absent).
func storageVersionOf(t *testing.T, dataDir string) string {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dataDir, "member", "snap", "db"), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte("meta")); b != nil {
			v = string(b.Get([]byte("storageVersion")))
		}
		return nil
	})
	return v
}

var callerField = regexp.MustCompile(`^[\w./-]+\.go:\d+$`)

// logMessages keeps the level, message and fields of the tool's own log
// lines: no timestamps, callers, bbolt's lines or stack traces.
func logMessages(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		f := strings.Split(l, "\t")
		if len(f) < 3 || f[0] == "" || (f[1] != "info" && f[1] != "warn" && f[1] != "error") || f[2] == "bbolt" {
			continue
		}
		rest := f[1:2]
		for _, x := range f[2:] {
			if !callerField.MatchString(x) {
				rest = append(rest, x)
			}
		}
		out = append(out, strings.Join(rest, " "))
	}
	return out
}

// TestMigrateMatchesEtcdutl walks both tools through the same migrations,
// each on its own copy of a real etcd's data dir, and compares output,
// log messages, exit codes and the storage version written.
func TestMigrateMatchesEtcdutl(t *testing.T) {
	fixture(t)
	srcDir := filepath.Join(fixtureDir, "src-data")
	dirs := map[string]string{"etcdutl": copyDataDir(t, srcDir), "cairnutl": copyDataDir(t, srcDir)}
	steps := [][]string{
		{"--target-version", "3.7"},
		{"--target-version", "3.6"},
		{"--target-version", "3.6"},
		{"--target-version", "3.5"},
		{"--target-version", "3.5"},
		{"--target-version", "3.7"},
		{"--target-version", "3.8"},
		{"--target-version", "3.8", "--force"},
		{"--target-version", "3.5", "--force"},
		{"--target-version", "4.0"},
		{"--target-version", "3.4"},
		{"--target-version", "x.y"},
		{"--target-version", "3"},
		{"--target-version", "3.6.1"},
		{"--target-version", ""},
	}
	for _, st := range steps {
		etcd, cairn := sameRun(t, func(tool string) []string {
			return append([]string{"migrate", "--data-dir", dirs[tool]}, st...)
		})
		if e, c := logMessages(etcd.stderr), logMessages(cairn.stderr); strings.Join(e, "\n") != strings.Join(c, "\n") {
			t.Errorf("migrate %v: log messages differ:\netcdutl:\n%s\ncairnutl:\n%s", st, strings.Join(e, "\n"), strings.Join(c, "\n"))
		}
		if e, c := storageVersionOf(t, dirs["etcdutl"]), storageVersionOf(t, dirs["cairnutl"]); e != c {
			t.Errorf("migrate %v: storage version etcdutl %q, cairnutl %q", st, e, c)
		}
	}
	same(t, "migrate", "--target-version", "3.6")
	same(t, "migrate", "--data-dir", filepath.Join(t.TempDir(), "none"), "--target-version", "3.6")
}

// TestMigratedDataDirServes: after a downgrade to 3.6 and back, cairn
// serves the migrated data dir and reports the storage version it decided.
func TestMigrateThenServe(t *testing.T) {
	s := fixture(t)
	dir := copyDataDir(t, filepath.Join(fixtureDir, "src-data"))
	for _, v := range []string{"3.6", "3.7"} {
		if r := run(t, cairnutlBin, "migrate", "--data-dir", dir, "--target-version", v); r.code != 0 {
			t.Fatalf("migrate to %s: exit %d: %s", v, r.code, r.stderr)
		}
	}
	if got := storageVersionOf(t, dir); got != "3.7.0" {
		t.Fatalf("storage version after migrating back = %q, want 3.7.0", got)
	}
	m := member{name: "src", peerURL: peerURL(t), dataDir: dir}
	srv := startServer(t, "cairn", cairnBin, m, []member{m})
	checkServes(t, srv, s.kvs, s.rev)
}
