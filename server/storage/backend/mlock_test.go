package backend

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// lockedKB is the process's locked memory (VmLck) in kB; the test skips
// where /proc does not report it.
func lockedKB(t *testing.T) int {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmLck:" {
			kb, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("VmLck line %q: %v", line, err)
			}
			return kb
		}
	}
	t.Skip("/proc/self/status has no VmLck")
	return 0
}

// --memory-mlock locks the db file's pages while the backend is open, also
// across a defrag (which reopens the file), and releases them on close.
func TestMlock(t *testing.T) {
	before := lockedKB(t)
	b, err := Open(Config{Path: filepath.Join(t.TempDir(), "db"), UnsafeNoFsync: true, Mlock: true})
	if err != nil {
		t.Skipf("mlock refused here (memlock limit?): %v", err)
	}
	defer b.Close()
	if got := lockedKB(t); got <= before {
		t.Fatalf("VmLck %d kB after opening with Mlock, was %d kB", got, before)
	}
	fillKeys(b, 100, 100)
	if err := b.Defrag(); err != nil {
		t.Fatalf("Defrag: %v", err)
	}
	if got := lockedKB(t); got <= before {
		t.Errorf("VmLck %d kB after defrag, was %d kB before opening", got, before)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := lockedKB(t); got != before {
		t.Errorf("VmLck %d kB after close, want %d kB", got, before)
	}
}
