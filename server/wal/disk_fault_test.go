package wal

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cairnkv/cairn/server/wal/walpb"
)

// faultyDisk is the real disk with one kind of call failing once armed.
type faultyDisk struct {
	osDisk
	mu      sync.Mutex
	armed   bool
	op      string // "write", "fdatasync", "fsync", "preallocate", "truncate", "rename"
	err     syscall.Errno
	calls   map[string]int // calls of each op since the fault was armed
	matches func(name string) bool
}

func (d *faultyDisk) fail(op, name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.armed {
		return nil
	}
	d.calls[op]++
	if op == d.op && (d.matches == nil || d.matches(name)) {
		return d.err
	}
	return nil
}

func (d *faultyDisk) writer(f *os.File) io.WriterAt { return faultyWriter{d, f} }
func (d *faultyDisk) fdatasync(f *os.File) error {
	if err := d.fail("fdatasync", f.Name()); err != nil {
		return err
	}
	return d.osDisk.fdatasync(f)
}
func (d *faultyDisk) fsync(f *os.File) error {
	if err := d.fail("fsync", f.Name()); err != nil {
		return err
	}
	return d.osDisk.fsync(f)
}
func (d *faultyDisk) preallocate(f *os.File, size int64) error {
	if err := d.fail("preallocate", f.Name()); err != nil {
		return err
	}
	return d.osDisk.preallocate(f, size)
}
func (d *faultyDisk) truncate(f *os.File, size int64) error {
	if err := d.fail("truncate", f.Name()); err != nil {
		return err
	}
	return d.osDisk.truncate(f, size)
}
func (d *faultyDisk) rename(from, to string) error {
	if err := d.fail("rename", from); err != nil {
		return err
	}
	return d.osDisk.rename(from, to)
}

type faultyWriter struct {
	d *faultyDisk
	f *os.File
}

func (w faultyWriter) WriteAt(p []byte, off int64) (int, error) {
	if err := w.d.fail("write", w.f.Name()); err != nil {
		return 0, err
	}
	return w.f.WriteAt(p, off)
}

// withDisk makes the WAL use d for the test.
func withDisk(t *testing.T, d diskOps) {
	old := disk
	disk = d
	t.Cleanup(func() { disk = old })
}

// TestDiskFaultsAreNeverTakenForSuccess: whatever disk call fails, the Save
// that met it fails with that errno, every later append or sync fails with
// ErrFailed without touching the disk again (a failed fsync is never
// retried as if a second one could vouch for the lost pages), and a reopen
// on a healthy disk finds every entry whose Save succeeded.
func TestDiskFaultsAreNeverTakenForSuccess(t *testing.T) {
	isTmp := func(name string) bool { return strings.HasSuffix(name, ".tmp") }
	tests := []struct {
		name    string
		op      string
		err     syscall.Errno
		matches func(string) bool
	}{
		{"EIO on write", "write", syscall.EIO, nil},
		{"ENOSPC on write", "write", syscall.ENOSPC, nil},
		{"read-only on write", "write", syscall.EROFS, nil},
		{"EIO on fdatasync", "fdatasync", syscall.EIO, nil},
		{"ENOSPC on preallocating the next segment", "preallocate", syscall.ENOSPC, isTmp},
		{"EIO on truncating the finished segment", "truncate", syscall.EIO, nil},
		{"EIO on renaming the new segment", "rename", syscall.EIO, nil},
		{"EIO on fsyncing the WAL directory", "fsync", syscall.EIO, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withSegmentSize(t, 16*1024)
			d := &faultyDisk{op: tc.op, err: tc.err, matches: tc.matches, calls: map[string]int{}}
			withDisk(t, d)
			dir := filepath.Join(t.TempDir(), "wal")
			w := mustCreate(t, dir, nil)
			mustSave(t, w, hardState(1, 1, 0), entries(1, 5, 1, 200))
			acked := uint64(5)

			d.mu.Lock()
			d.armed = true
			d.mu.Unlock()
			var failure error
			for i := acked + 1; i < 400 && failure == nil; i++ {
				// Big enough that writes, syncs and cuts all happen.
				if err := w.Save(hardState(1, 1, i-1), entries(i, 1, 1, 900)); err != nil {
					failure = err
					break
				}
				acked = i
			}
			if !errors.Is(failure, tc.err) {
				t.Fatalf("the Save that met the fault returned %v, want %v", failure, tc.err)
			}
			d.mu.Lock()
			before := d.calls["fdatasync"] + d.calls["write"]
			d.mu.Unlock()
			for _, err := range []error{w.Save(hardState(1, 1, acked), entries(acked+1, 1, 1, 10)), w.Sync(),
				w.SaveSnapshot(walpb.Snapshot{})} {
				if !errors.Is(err, ErrFailed) {
					t.Fatalf("a call after the failure returned %v, want ErrFailed", err)
				}
			}
			if err := w.Close(); err != nil {
				t.Logf("Close after the failure: %v", err)
			}
			d.mu.Lock()
			after := d.calls["fdatasync"] + d.calls["write"]
			d.armed = false
			d.mu.Unlock()
			if after != before {
				t.Fatalf("%d more writes or syncs after the failure (Close included)", after-before)
			}

			w2, err := Open(nil, dir, walpb.Snapshot{})
			if err != nil {
				t.Fatal(err)
			}
			defer w2.Close()
			_, _, ents, err := w2.ReadAll()
			if err != nil {
				t.Fatalf("reopen after the fault: %v", err)
			}
			if n := uint64(len(ents)); n < acked {
				t.Fatalf("reopened WAL has %d entries, %d were acknowledged", n, acked)
			}
		})
	}
}
