package snap

import (
	"os"

	"github.com/cairnkv/cairn/pkg/fileutil"
)

// diskOps are the calls through which the snapshotter makes its files
// durable: the points a failing disk fails at. Tests replace them to check
// that a failure never leaves a file that looks complete.
type diskOps interface {
	writeAndSync(path string, data []byte, perm os.FileMode) error
	fsync(f *os.File) error
	fsyncDir(dir string) error
	rename(from, to string) error
}

// disk is the snapshotter's diskOps; only tests change it.
var disk diskOps = osDisk{}

type osDisk struct{}

func (osDisk) writeAndSync(path string, data []byte, perm os.FileMode) error {
	return fileutil.WriteAndSyncFile(path, data, perm)
}
func (osDisk) fsync(f *os.File) error       { return fileutil.Fsync(f) }
func (osDisk) fsyncDir(dir string) error    { return fileutil.FsyncDir(dir) }
func (osDisk) rename(from, to string) error { return os.Rename(from, to) }
