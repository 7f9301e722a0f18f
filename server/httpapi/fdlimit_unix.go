//go:build unix

package httpapi

import "syscall"

// fdLimit is the process's soft limit on open files, as etcd reports it
// (0 when it cannot be read, as etcd reports then too).
func fdLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return rl.Cur
}
