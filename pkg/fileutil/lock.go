//go:build unix

package fileutil

import (
	"errors"
	"os"
	"syscall"
)

// ErrLocked is returned by TryLockFile when another open file holds the lock.
var ErrLocked = errors.New("fileutil: file already locked")

// LockedFile is an open file holding an exclusive flock. Closing it releases
// the lock. flock locks belong to the open file description, so two opens of
// the same path conflict even inside one process - which is what lets purge
// skip files a WAL still uses.
type LockedFile struct{ *os.File }

// TryLockFile opens path and takes an exclusive lock without waiting.
func TryLockFile(path string, flag int, perm os.FileMode) (*LockedFile, error) {
	return lockFile(path, flag, perm, syscall.LOCK_EX|syscall.LOCK_NB)
}

// LockFile opens path and waits for an exclusive lock.
func LockFile(path string, flag int, perm os.FileMode) (*LockedFile, error) {
	return lockFile(path, flag, perm, syscall.LOCK_EX)
}

func lockFile(path string, flag int, perm os.FileMode, how int) (*LockedFile, error) {
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, ErrLocked
		}
		return nil, err
	}
	return &LockedFile{f}, nil
}
