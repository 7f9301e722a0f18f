package snap

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// faultyDisk fails one kind of call with err.
type faultyDisk struct {
	osDisk
	op  string // "write", "fsync", "fsyncDir", "rename"
	err error
}

func (d faultyDisk) writeAndSync(path string, data []byte, perm os.FileMode) error {
	if d.op == "write" {
		// A write that failed half way leaves a partial file behind.
		os.WriteFile(path, data[:len(data)/2], perm)
		return d.err
	}
	return d.osDisk.writeAndSync(path, data, perm)
}
func (d faultyDisk) fsync(f *os.File) error {
	if d.op == "fsync" {
		return d.err
	}
	return d.osDisk.fsync(f)
}
func (d faultyDisk) fsyncDir(dir string) error {
	if d.op == "fsyncDir" {
		return d.err
	}
	return d.osDisk.fsyncDir(dir)
}
func (d faultyDisk) rename(from, to string) error {
	if d.op == "rename" {
		return d.err
	}
	return d.osDisk.rename(from, to)
}

func withDisk(t *testing.T, d diskOps) {
	old := disk
	disk = d
	t.Cleanup(func() { disk = old })
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestSaveSnapDiskFaults: a .snap file whose write, fsync or directory
// fsync failed is not left behind, so the WAL never records a snapshot
// whose file a restart would not find whole.
func TestSaveSnapDiskFaults(t *testing.T) {
	for _, op := range []string{"write", "fsyncDir"} {
		for _, errno := range []error{syscall.EIO, syscall.ENOSPC, syscall.EROFS} {
			t.Run(op+"/"+errno.Error(), func(t *testing.T) {
				withDisk(t, faultyDisk{op: op, err: errno})
				dir := t.TempDir()
				err := New(nil, dir).SaveSnap(testSnap(2, 10))
				if !errors.Is(err, errno) {
					t.Fatalf("SaveSnap = %v, want %v", err, errno)
				}
				if names := dirNames(t, dir); len(names) != 0 {
					t.Fatalf("files left after the failed save: %v", names)
				}
			})
		}
	}
}

// TestSaveDBFromDiskFaults: a database snapshot whose fsync, rename or
// directory fsync failed leaves no file, and the retransmission after the
// fault is gone saves it whole instead of trusting a name that the failed
// fsync did not make durable.
func TestSaveDBFromDiskFaults(t *testing.T) {
	db := bytes.Repeat([]byte("d"), 1<<16)
	for _, op := range []string{"fsync", "rename", "fsyncDir"} {
		t.Run(op, func(t *testing.T) {
			dir := t.TempDir()
			s := New(nil, dir)
			withDisk(t, faultyDisk{op: op, err: syscall.EIO})
			if _, err := s.SaveDBFrom(bytes.NewReader(db), 7); !errors.Is(err, syscall.EIO) {
				t.Fatalf("SaveDBFrom = %v, want EIO", err)
			}
			if names := dirNames(t, dir); len(names) != 0 {
				t.Fatalf("files left after the failed save: %v", names)
			}
			disk = osDisk{}
			if _, err := s.SaveDBFrom(bytes.NewReader(db), 7); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(dir, "0000000000000007.snap.db"))
			if err != nil || !bytes.Equal(got, db) {
				t.Fatalf("retransmitted db: %d bytes, %v", len(got), err)
			}
		})
	}
}
