package backend

import (
	"os"
	"path/filepath"
	"testing"
)

// NewTmpBackend opens a backend on a fresh file in tb's temporary directory
// and returns it with the file's path. The backend is closed and the file
// removed when the test ends; closing it earlier is allowed. It skips fsync
// (UnsafeNoFsync) to keep tests fast; commit semantics are unchanged.
func NewTmpBackend(tb testing.TB) (Backend, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "db")
	b, err := Open(Config{Path: path, UnsafeNoFsync: true})
	if err != nil {
		tb.Fatalf("backend.NewTmpBackend: %v", err)
	}
	tb.Cleanup(func() {
		if err := b.Close(); err != nil {
			tb.Errorf("backend.NewTmpBackend: close: %v", err)
		}
		_ = os.Remove(path)
	})
	return b, path
}
