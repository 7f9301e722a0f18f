package fileutil

import (
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"
)

// PurgeOnce removes the oldest files in dir ending with suffix until at most
// max remain, and returns the paths it removed. It stops at the first file it
// cannot lock: a locked file is still in use (a WAL segment not yet released)
// and so is every newer one. max 0 means keep everything.
func PurgeOnce(lg *zap.Logger, dir, suffix string, max uint) ([]string, error) {
	if lg == nil {
		lg = zap.NewNop()
	}
	if max == 0 {
		return nil, nil
	}
	names, err := ReadDirNames(dir, suffix)
	if err != nil {
		return nil, err
	}
	var removed []string
	for uint(len(names)) > max {
		path := filepath.Join(dir, names[0])
		ok, err := removeUnlocked(path)
		if err != nil {
			return removed, err
		}
		if !ok {
			break
		}
		lg.Info("purged", zap.String("path", path))
		removed = append(removed, path)
		names = names[1:]
	}
	return removed, nil
}

// removeUnlocked deletes path while holding its lock, so that nobody can take
// the file between the check and the removal. It reports false when the file
// is locked by someone else.
func removeUnlocked(path string) (bool, error) {
	l, err := TryLockFile(path, os.O_WRONLY, PrivateFileMode)
	if err == ErrLocked {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := os.Remove(path); err != nil {
		l.Close()
		return false, err
	}
	return true, l.Close()
}

// PurgeFileLoop runs PurgeOnce on every tick until stop is closed. The first
// error is sent on errc and ends the loop; done is closed when the goroutine
// has returned. Callers pass time.NewTicker(interval).C as tick; tests pass a
// channel they drive by hand.
func PurgeFileLoop(lg *zap.Logger, dir, suffix string, max uint, tick <-chan time.Time, stop <-chan struct{}) (errc <-chan error, done <-chan struct{}) {
	errch := make(chan error, 1)
	donech := make(chan struct{})
	go func() {
		defer close(donech)
		for {
			select {
			case <-stop:
				return
			case <-tick:
			}
			if _, err := PurgeOnce(lg, dir, suffix, max); err != nil {
				errch <- err
				return
			}
		}
	}()
	return errch, donech
}
