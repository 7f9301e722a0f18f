package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/fileutil"
)

// errSparesClosed is what take answers once the WAL has closed its spares.
var errSparesClosed = errors.New("wal: no more segment files: the WAL is closed")

// spareSegments hands the WAL its next segment file already created, locked
// and preallocated, so that cutting a segment does not wait while the file
// system allocates 64 MB. One spare is always in the making in the
// background; take waits for it and starts the next. The WAL's own lock
// serializes take and close.
//
// Each spare has a name of its own (spare-<n>.tmp) until the WAL renames it
// into a segment: the WAL writes the segment's header into the file before
// it renames it, while the next spare is already being made. Spares left by
// a crash are removed when the next spareSegments starts in that directory.
type spareSegments struct {
	lg   *zap.Logger
	dir  string
	size int64

	made    int              // spares started so far; numbers their names
	pending chan spareResult // the spare in the making; nil once closed
}

// spareResult is a finished spare, or why it could not be made.
type spareResult struct {
	file *fileutil.LockedFile
	err  error
}

const (
	sparePrefix = "spare-"
	spareSuffix = ".tmp"
)

// newSpareSegments removes spares a crash left in dir and starts making the
// first one.
func newSpareSegments(lg *zap.Logger, dir string, size int64) *spareSegments {
	s := &spareSegments{lg: lg, dir: dir, size: size}
	s.removeLeftovers()
	s.startNext()
	return s
}

// take returns the spare in the making once it is ready and starts the next.
// A spare that failed (a full disk, say) is reported, and the next take
// tries again with a new one.
func (s *spareSegments) take() (*fileutil.LockedFile, error) {
	if s.pending == nil {
		return nil, errSparesClosed
	}
	r := <-s.pending
	s.startNext()
	return r.file, r.err
}

// close waits for the spare in the making and removes it.
func (s *spareSegments) close() error {
	if s.pending == nil {
		return nil
	}
	r := <-s.pending
	s.pending = nil
	if r.err != nil {
		return r.err
	}
	return errors.Join(os.Remove(r.file.Name()), r.file.Close())
}

func (s *spareSegments) startNext() {
	path := filepath.Join(s.dir, fmt.Sprintf("%s%d%s", sparePrefix, s.made, spareSuffix))
	s.made++
	s.pending = make(chan spareResult, 1)
	go func(done chan<- spareResult) { done <- s.make(path) }(s.pending)
}

// make creates one spare at path, preallocated to the segment size.
func (s *spareSegments) make(path string) spareResult {
	f, err := fileutil.LockFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fileutil.PrivateFileMode)
	if err != nil {
		return spareResult{err: err}
	}
	if err := disk.preallocate(f.File, s.size); err != nil {
		s.lg.Error("failed to preallocate space when creating a new WAL", zap.Int64("size", s.size), zap.Error(err))
		f.Close()
		os.Remove(path)
		return spareResult{err: err}
	}
	return spareResult{file: f}
}

// removeLeftovers deletes spares that a crash kept from being renamed or
// removed, and etcd's own (0.tmp, 1.tmp) when cairn takes over its
// directory: none of them holds a record the WAL acknowledged.
func (s *spareSegments) removeLeftovers() {
	names, err := os.ReadDir(s.dir)
	if err != nil {
		return // the WAL reports unreadable directories itself
	}
	for _, e := range names {
		n := e.Name()
		ours := strings.HasPrefix(n, sparePrefix) && strings.HasSuffix(n, spareSuffix)
		if ours || n == "0.tmp" || n == "1.tmp" {
			if err := os.Remove(filepath.Join(s.dir, n)); err != nil {
				s.lg.Warn("failed to remove a leftover WAL spare file", zap.String("path", n), zap.Error(err))
			}
		}
	}
}
