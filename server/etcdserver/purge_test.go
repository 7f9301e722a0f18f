package etcdserver

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/zap"
)

func TestFilePurgerKeepsTheNewestFiles(t *testing.T) {
	snapDir, walDir := t.TempDir(), t.TempDir()
	for _, name := range []string{"1.snap", "2.snap", "3.snap", "4.snap"} {
		if err := os.WriteFile(filepath.Join(snapDir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"1.wal", "2.wal"} {
		if err := os.WriteFile(filepath.Join(walDir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	filePurger{snapDir: snapDir, walDir: walDir, maxSnaps: 2, maxWALs: 5, lg: zap.NewNop()}.purgeOnce()
	if got := dirNames(t, snapDir); !slices.Equal(got, []string{"3.snap", "4.snap"}) {
		t.Fatalf("snap files left: %v, want the two newest", got)
	}
	if got := dirNames(t, walDir); !slices.Equal(got, []string{"1.wal", "2.wal"}) {
		t.Fatalf("wal files left: %v, want both (under --max-wals)", got)
	}
}

func dirNames(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
