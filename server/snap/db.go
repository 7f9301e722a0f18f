package snap

import (
	"fmt"
	"github.com/cairnkv/cairn/server/metrics"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/cairnkv/cairn/pkg/fileutil"
	"go.uber.org/zap"
)

// SaveDBFrom stores a database snapshot received from a leader as
// "<id>.snap.db", where id is the snapshot's raft index. The data goes to a
// temporary file that is fsynced and then renamed, so the final name only
// ever holds a complete database. It returns the bytes read from r.
func (s *Snapshotter) SaveDBFrom(r io.Reader, id uint64) (int64, error) {
	start := time.Now()
	f, err := os.CreateTemp(s.dir, "tmp")
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if err == nil {
		fsyncStart := time.Now()
		err = disk.fsync(f)
		metrics.SnapDBFsyncSeconds.Observe(time.Since(fsyncStart).Seconds())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return n, err
	}
	path := s.dbFilePath(id)
	if fileutil.Exist(path) {
		// A retransmission of a snapshot already received.
		os.Remove(f.Name())
		return n, nil
	}
	if err := disk.rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return n, err
	}
	if err := disk.fsyncDir(s.dir); err != nil {
		// The name may not survive a power cut: take it away, or the
		// retransmission would find it and skip the fsync that failed.
		os.Remove(path)
		return n, err
	}
	metrics.SnapDBSaveSeconds.Observe(time.Since(start).Seconds())
	s.lg.Info("saved database snapshot to disk", zap.String("path", path), zap.Int64("bytes", n))
	return n, nil
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
