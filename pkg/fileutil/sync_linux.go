//go:build linux

package fileutil

import (
	"os"
	"syscall"
)

// Fsync flushes f's data and metadata to stable storage.
func Fsync(f *os.File) error { return f.Sync() }

// Fdatasync flushes f's data, and only the metadata needed to read it back
// (such as its size); cheaper than Fsync for appends to preallocated files.
func Fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// Preallocate reserves size bytes of disk for f. With extend the file's size
// grows to size (the new range reads as zeros); without it only blocks are
// reserved. File systems without fallocate fall back to truncate when
// extending and to doing nothing otherwise.
func Preallocate(f *os.File, size int64, extend bool) error {
	if size == 0 {
		return nil
	}
	mode := uint32(0)
	if !extend {
		mode = 1 // FALLOC_FL_KEEP_SIZE
	}
	err := syscall.Fallocate(int(f.Fd()), mode, 0, size)
	if err == nil {
		return nil
	}
	if err != syscall.ENOTSUP && err != syscall.EINTR && err != syscall.EOPNOTSUPP {
		return err
	}
	if extend {
		return extendByTruncate(f, size)
	}
	return nil
}
