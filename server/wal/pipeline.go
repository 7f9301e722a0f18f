package wal

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cairnkv/cairn/pkg/fileutil"
	"go.uber.org/zap"
)

// filePipeline keeps the next segment file created, locked and preallocated
// in the background, so that cutting a segment does not wait for the disk
// to allocate 64 MB. Its files are named 0.tmp and 1.tmp until the WAL
// renames them.
type filePipeline struct {
	lg    *zap.Logger
	dir   string
	size  int64
	count int

	filec chan *fileutil.LockedFile
	errc  chan error
	donec chan struct{}
}

func newFilePipeline(lg *zap.Logger, dir string, size int64) *filePipeline {
	fp := &filePipeline{
		lg:    lg,
		dir:   dir,
		size:  size,
		filec: make(chan *fileutil.LockedFile),
		errc:  make(chan error, 1),
		donec: make(chan struct{}),
	}
	go fp.run()
	return fp
}

// Open returns a fresh preallocated file, waiting for it if needed.
func (fp *filePipeline) Open() (*fileutil.LockedFile, error) {
	select {
	case f := <-fp.filec:
		return f, nil
	case err, ok := <-fp.errc:
		if !ok {
			return nil, fmt.Errorf("wal: file pipeline closed")
		}
		return nil, err
	}
}

// Close stops the goroutine and removes the file it held ready.
func (fp *filePipeline) Close() error {
	close(fp.donec)
	return <-fp.errc
}

func (fp *filePipeline) alloc() (*fileutil.LockedFile, error) {
	// Alternate names: the previous file may not be renamed yet.
	path := filepath.Join(fp.dir, fmt.Sprintf("%d.tmp", fp.count%2))
	f, err := fileutil.LockFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fileutil.PrivateFileMode)
	if err != nil {
		return nil, err
	}
	if err := fileutil.Preallocate(f.File, fp.size, true); err != nil {
		fp.lg.Error("failed to preallocate space when creating a new WAL", zap.Int64("size", fp.size), zap.Error(err))
		f.Close()
		return nil, err
	}
	fp.count++
	return f, nil
}

func (fp *filePipeline) run() {
	defer close(fp.errc)
	for {
		f, err := fp.alloc()
		if err != nil {
			fp.errc <- err
			return
		}
		select {
		case fp.filec <- f:
		case <-fp.donec:
			os.Remove(f.Name())
			f.Close()
			return
		}
	}
}
