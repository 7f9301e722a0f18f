//go:build !linux

package backend

// dropMapping does nothing where MADV_DONTNEED's meaning for shared file
// mappings is not the one relied on (Linux's).
func dropMapping(addr uintptr, size int64) error { return nil }
