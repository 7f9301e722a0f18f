package backend

import "golang.org/x/sys/unix"

// dropMapping advises the kernel with MADV_DONTNEED over size bytes of the
// shared, read-only file mapping at addr: resident pages are unmapped, the
// file's content is untouched. addr comes from bbolt as a uintptr and is
// passed to the system call as one, never converted to a Go pointer.
func dropMapping(addr uintptr, size int64) error {
	if addr == 0 || size <= 0 {
		return nil
	}
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, addr, uintptr(size), unix.MADV_DONTNEED)
	if errno != 0 {
		return errno
	}
	return nil
}
