// Package fileutil holds small file-system helpers shared by the storage
// packages: durable writes (fsync of files and directories), exclusive file
// locks, preallocation and the purge of old numbered files. It knows nothing
// about cairn's formats; callers pass names and suffixes.
package fileutil

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

const (
	// PrivateFileMode is the permission of files only the server may read.
	PrivateFileMode = 0o600
	// PrivateDirMode is the permission of directories only the server may enter.
	PrivateDirMode = 0o700
)

// Exist reports whether something exists at path.
func Exist(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ReadDirNames returns the names in dir that end with suffix ("" for all),
// sorted lexically. Fixed-width hex names therefore come out oldest first.
func ReadDirNames(dir, suffix string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	all, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	names := all[:0]
	for _, n := range all {
		if strings.HasSuffix(n, suffix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// CreateDirAll creates dir (and parents) with PrivateDirMode and insists that
// it is empty, so a half-initialised directory is never silently reused.
func CreateDirAll(dir string) error {
	if err := os.MkdirAll(dir, PrivateDirMode); err != nil {
		return err
	}
	names, err := ReadDirNames(dir, "")
	if err != nil {
		return err
	}
	if len(names) != 0 {
		return fmt.Errorf("expected %q to be empty, got %q", dir, names)
	}
	return nil
}

// OpenDir opens a directory so that it can be fsynced.
func OpenDir(dir string) (*os.File, error) {
	return os.Open(dir)
}

// FsyncDir makes the entries of dir (creations, renames, removals) durable.
func FsyncDir(dir string) error {
	d, err := OpenDir(dir)
	if err != nil {
		return err
	}
	if err := Fsync(d); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// ZeroToEnd discards everything in f from its current offset on and refills
// that range with zeros, keeping the file's size. A WAL uses it to wipe a
// torn tail so that later appends never sit next to stale bytes.
func ZeroToEnd(f *os.File) error {
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if err := f.Truncate(off); err != nil {
		return err
	}
	if err := Preallocate(f, size, true); err != nil {
		return err
	}
	_, err = f.Seek(off, io.SeekStart)
	return err
}

// WriteAndSyncFile writes data to a new or truncated file at path and fsyncs
// it before closing, so the content is durable when it returns nil.
func WriteAndSyncFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = Fsync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// IsTerminal reports whether w is a terminal (a character device), where
// a progress line helps a person; on a pipe or a file it would only be
// noise in what scripts read.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
