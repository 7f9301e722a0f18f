package fileutil

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("x"), PrivateFileMode); err != nil {
		t.Fatal(err)
	}
}

func TestTryLockFileConflictsWithinProcess(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	touch(t, p)
	l, err := TryLockFile(p, os.O_RDWR, PrivateFileMode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryLockFile(p, os.O_RDWR, PrivateFileMode); err != ErrLocked {
		t.Fatalf("second lock: got %v, want ErrLocked", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := TryLockFile(p, os.O_RDWR, PrivateFileMode)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Close()
}

func TestPreallocateAndZeroToEnd(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Preallocate(f, 4096, true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("abcdefgh"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(3, 0); err != nil {
		t.Fatal(err)
	}
	if err := ZeroToEnd(f); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 4096 || string(b[:3]) != "abc" || b[3] != 0 || b[7] != 0 {
		t.Fatalf("size %d, head %q", len(b), b[:8])
	}
	if off, _ := f.Seek(0, 1); off != 3 {
		t.Fatalf("offset %d after ZeroToEnd, want 3", off)
	}
}

func TestCreateDirAllRejectsNonEmpty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := CreateDirAll(dir); err != nil {
		t.Fatal(err)
	}
	touch(t, filepath.Join(dir, "x"))
	if err := CreateDirAll(dir); err == nil {
		t.Fatal("expected error for non-empty dir")
	}
	if err := FsyncDir(dir); err != nil {
		t.Fatal(err)
	}
}

func TestPurgeOnce(t *testing.T) {
	tests := []struct {
		name      string
		files     int
		max       uint
		locked    int // index of a locked file, -1 for none
		wantLeft  []string
		wantCount int
	}{
		{"under limit", 3, 5, -1, []string{"0.wal", "1.wal", "2.wal"}, 0},
		{"over limit", 7, 5, -1, []string{"2.wal", "3.wal", "4.wal", "5.wal", "6.wal"}, 2},
		{"stops at locked", 7, 2, 1, []string{"1.wal", "2.wal", "3.wal", "4.wal", "5.wal", "6.wal"}, 1},
		{"zero max keeps all", 3, 0, -1, []string{"0.wal", "1.wal", "2.wal"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for i := 0; i < tt.files; i++ {
				touch(t, filepath.Join(dir, string(rune('0'+i))+".wal"))
			}
			touch(t, filepath.Join(dir, "other.snap"))
			if tt.locked >= 0 {
				l, err := TryLockFile(filepath.Join(dir, string(rune('0'+tt.locked))+".wal"), os.O_RDWR, PrivateFileMode)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
			}
			removed, err := PurgeOnce(nil, dir, ".wal", tt.max)
			if err != nil {
				t.Fatal(err)
			}
			if len(removed) != tt.wantCount {
				t.Fatalf("removed %v", removed)
			}
			left, _ := ReadDirNames(dir, ".wal")
			if len(left) != len(tt.wantLeft) {
				t.Fatalf("left %v, want %v", left, tt.wantLeft)
			}
			for i := range left {
				if left[i] != tt.wantLeft[i] {
					t.Fatalf("left %v, want %v", left, tt.wantLeft)
				}
			}
			if !Exist(filepath.Join(dir, "other.snap")) {
				t.Fatal("purge touched a file with another suffix")
			}
		})
	}
}

func TestPurgeFileLoop(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 4; i++ {
		touch(t, filepath.Join(dir, string(rune('0'+i))+".snap"))
	}
	tick := make(chan time.Time)
	stop := make(chan struct{})
	errc, done := PurgeFileLoop(nil, dir, ".snap", 1, tick, stop)
	tick <- time.Time{}
	tick <- time.Time{} // the loop took this only after the first round finished
	close(stop)
	<-done
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	left, _ := ReadDirNames(dir, ".snap")
	if len(left) != 1 || left[0] != "3.snap" {
		t.Fatalf("left %v", left)
	}
}

func TestIsTerminal(t *testing.T) {
	tests := []struct {
		name string
		w    func(t *testing.T) io.Writer
		want bool
	}{
		{"buffer", func(*testing.T) io.Writer { return &bytes.Buffer{} }, false},
		{"regular file", func(t *testing.T) io.Writer {
			f, err := os.Create(filepath.Join(t.TempDir(), "f"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}, false},
		{"character device", func(t *testing.T) io.Writer {
			f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				t.Skip(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsTerminal(tt.w(t)); got != tt.want {
				t.Errorf("IsTerminal = %v, want %v", got, tt.want)
			}
		})
	}
}
