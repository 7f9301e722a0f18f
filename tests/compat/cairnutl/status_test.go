package cairnutl

import (
	"os"
	"testing"
)

var formats = []string{"simple", "json", "table", "fields", "protobuf", "bogus"}

func TestStatusMatchesEtcdutl(t *testing.T) {
	s := fixture(t)
	for _, path := range []string{s.snapPath, s.dbPath} {
		for _, w := range formats {
			same(t, "snapshot", "status", path, "-w", w)
			same(t, "--write-out", w, "snapshot", "status", path)
		}
	}
}

func TestStatusErrorsMatchEtcdutl(t *testing.T) {
	s := fixture(t)
	same(t, "snapshot", "status")
	same(t, "snapshot", "status", s.snapPath, s.dbPath)
	same(t, "snapshot", "status", "/nonexistent/snapshot.db")
	garbage := t.TempDir() + "/garbage.db"
	if err := os.WriteFile(garbage, []byte("not a bbolt file at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	same(t, "snapshot", "status", garbage)
}

func TestVersion(t *testing.T) {
	r := run(t, cairnutlBin, "version")
	want := "cairnutl version: 0.1.0\netcdutl version: 3.7.1\nAPI version: 3.7\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("version: exit %d, %q; want %q", r.code, r.stdout, want)
	}
	e := run(t, etcdutlBin, "version")
	if e.stdout[len(e.stdout)-len("API version: 3.7\n"):] != "API version: 3.7\n" {
		t.Fatalf("etcdutl version output changed: %q", e.stdout)
	}
}
