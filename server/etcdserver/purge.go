package etcdserver

import (
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/fileutil"
)

// purgeInterval is how often old WAL and snap files are looked for (etcd's).
const purgeInterval = 30 * time.Second

// purgeLoop keeps at most --max-snapshots .snap files and --max-wals .wal
// files; WAL files still locked (not yet covered by a snapshot) stay.
func (s *Server) purgeLoop() {
	t := time.NewTicker(purgeInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.purgeOnce()
		case <-s.stopc:
			return
		}
	}
}

func (s *Server) purgeOnce() {
	if _, err := fileutil.PurgeOnce(s.lg, s.cfg.snapDir(), ".snap", s.cfg.MaxSnapFiles); err != nil {
		s.lg.Warn("failed to purge snap files", zap.Error(err))
	}
	if _, err := fileutil.PurgeOnce(s.lg, s.cfg.walDir(), ".wal", s.cfg.MaxWALFiles); err != nil {
		s.lg.Warn("failed to purge wal files", zap.Error(err))
	}
}
