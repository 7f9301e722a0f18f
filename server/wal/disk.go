package wal

import (
	"io"
	"os"

	"github.com/cairnkv/cairn/pkg/fileutil"
)

// diskOps are the calls through which the WAL changes what is on disk once
// a log exists: writing frames, making them durable, preparing and naming
// segments. They are the points a failing disk fails at, so tests replace
// them (see faultyDisk in the tests) to check that no failure is ever taken
// for success.
type diskOps interface {
	// writer returns what the encoder writes frames of f through.
	writer(f *os.File) io.WriterAt
	fdatasync(f *os.File) error
	fsync(f *os.File) error
	preallocate(f *os.File, size int64) error
	truncate(f *os.File, size int64) error
	rename(from, to string) error
}

// disk is the WAL's diskOps; only tests change it.
var disk diskOps = osDisk{}

// osDisk is the real disk.
type osDisk struct{}

func (osDisk) writer(f *os.File) io.WriterAt { return f }
func (osDisk) fdatasync(f *os.File) error    { return fileutil.Fdatasync(f) }
func (osDisk) fsync(f *os.File) error        { return fileutil.Fsync(f) }
func (osDisk) preallocate(f *os.File, size int64) error {
	return fileutil.Preallocate(f, size, true)
}
func (osDisk) truncate(f *os.File, size int64) error { return f.Truncate(size) }
func (osDisk) rename(from, to string) error          { return os.Rename(from, to) }
