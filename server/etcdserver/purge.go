package etcdserver

import (
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/fileutil"
)

// purgeInterval is how often old WAL and snap files are looked for (etcd's).
const purgeInterval = 30 * time.Second

// filePurger keeps at most --max-snapshots .snap files and --max-wals .wal
// files; WAL files still locked (not yet covered by a snapshot) stay.
type filePurger struct {
	snapDir, walDir   string
	maxSnaps, maxWALs uint
	lg                *zap.Logger
}

func (c *Config) filePurger(lg *zap.Logger) filePurger {
	return filePurger{snapDir: c.snapDir(), walDir: c.walDir(), maxSnaps: c.MaxSnapFiles, maxWALs: c.MaxWALFiles, lg: lg}
}

// run purges every purgeInterval until stop.
func (p filePurger) run(stop <-chan struct{}) {
	t := time.NewTicker(purgeInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.purgeOnce()
		case <-stop:
			return
		}
	}
}

func (p filePurger) purgeOnce() {
	if _, err := fileutil.PurgeOnce(p.lg, p.snapDir, ".snap", p.maxSnaps); err != nil {
		p.lg.Warn("failed to purge snap files", zap.Error(err))
	}
	if _, err := fileutil.PurgeOnce(p.lg, p.walDir, ".wal", p.maxWALs); err != nil {
		p.lg.Warn("failed to purge wal files", zap.Error(err))
	}
}
