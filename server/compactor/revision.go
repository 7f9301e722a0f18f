package compactor

import (
	"time"

	"go.uber.org/zap"
)

// runRevision compacts to current revision - retention every
// revisionInterval, skipping a target that is not positive or that it has
// already compacted to.
func (c *Compactor) runRevision() {
	retention := int64(c.cfg.Retention)
	var lastRev int64
	for c.sleep(revisionInterval) {
		if c.paused.Load() {
			continue
		}
		rev := c.cfg.Rev() - retention
		if rev <= 0 || rev == lastRev {
			continue
		}
		if c.compactLogged(ModeRevision, rev, zap.Int64("revision-compaction-retention", retention), revisionInterval) {
			lastRev = rev
		}
	}
}

// compactLogged compacts to rev and logs it as etcd's compactor of mode
// does ("starting auto <mode> compaction", then "failed ..." or "completed
// ..."), each line with the revision and retention, the mode's retention
// field (a failure also with retry, the interval after which the caller
// tries again). It reports whether the compaction succeeded.
func (c *Compactor) compactLogged(mode string, rev int64, retention zap.Field, retry time.Duration) bool {
	c.lg.Info("starting auto "+mode+" compaction", zap.Int64("revision", rev), retention)
	start := c.clock.Now()
	if err := c.compact(rev); err != nil {
		c.lg.Warn("failed auto "+mode+" compaction", zap.Int64("revision", rev), retention,
			zap.Duration("retry-interval", retry), zap.Error(err))
		return false
	}
	c.lg.Info("completed auto "+mode+" compaction", zap.Int64("revision", rev), retention,
		zap.Duration("took", c.clock.Now().Sub(start)))
	return true
}
