package snap

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/fileutil"
	"github.com/cairnkv/cairn/server/metrics"
)

// SaveDBFrom stores a database snapshot received from a leader as
// "<id>.snap.db", where id is the snapshot's raft index. The final name only
// ever holds a complete, durable database: the data is first made durable
// under a temporary name (receiveDB), then moved into place (installDB). It
// returns the bytes read from r.
func (s *Snapshotter) SaveDBFrom(r io.Reader, id uint64) (int64, error) {
	start := time.Now()
	tmp, n, err := s.receiveDB(r)
	if err != nil {
		return n, err
	}
	path := s.dbFilePath(id)
	if fileutil.Exist(path) {
		// A retransmission of a snapshot already received.
		os.Remove(tmp)
		return n, nil
	}
	if err := s.installDB(tmp, path); err != nil {
		return n, err
	}
	metrics.SnapDBSaveSeconds.Observe(time.Since(start).Seconds())
	s.lg.Info("saved database snapshot to disk", zap.String("path", path), zap.Int64("bytes", n))
	return n, nil
}

// receiveDB copies r into a new temporary file in the snap dir and fsyncs
// it; on failure nothing is left behind.
func (s *Snapshotter) receiveDB(r io.Reader) (tmp string, n int64, err error) {
	f, err := os.CreateTemp(s.dir, "tmp")
	if err != nil {
		return "", 0, err
	}
	n, err = io.Copy(f, r)
	if err == nil {
		synced := time.Now()
		err = disk.fsync(f)
		metrics.SnapDBFsyncSeconds.Observe(time.Since(synced).Seconds())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", n, err
	}
	return f.Name(), n, nil
}

// installDB renames tmp to path and makes the name durable. A name whose
// directory fsync failed is taken away again: it might not survive a power
// cut, and a retransmission finding it would skip the fsync that failed.
func (s *Snapshotter) installDB(tmp, path string) error {
	if err := disk.rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := disk.fsyncDir(s.dir); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// DBFilePath returns the path of the database snapshot with the given id,
// or ErrNoDBSnapshot if it has not been received.
func (s *Snapshotter) DBFilePath(id uint64) (string, error) {
	if _, err := fileutil.ReadDirNames(s.dir, ""); err != nil {
		return "", err
	}
	path := s.dbFilePath(id)
	if fileutil.Exist(path) {
		return path, nil
	}
	s.lg.Warn("failed to find [SNAPSHOT-INDEX].snap.db", zap.Uint64("snapshot-index", id), zap.String("path", path))
	return "", ErrNoDBSnapshot
}

func (s *Snapshotter) dbFilePath(id uint64) string {
	return filepath.Join(s.dir, fmt.Sprintf("%016x.snap.db", id))
}
