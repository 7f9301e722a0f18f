//go:build !linux

package fileutil

import "os"

// Fsync flushes f's data and metadata to stable storage.
func Fsync(f *os.File) error { return f.Sync() }

// Fdatasync falls back to a full fsync where fdatasync is unavailable.
func Fdatasync(f *os.File) error { return f.Sync() }

// Preallocate grows f to size when extend is set; without fallocate there is
// no portable way to only reserve blocks, so that case does nothing.
func Preallocate(f *os.File, size int64, extend bool) error {
	if !extend || size == 0 {
		return nil
	}
	return extendByTruncate(f, size)
}
