package compactor

import "go.uber.org/zap"

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
		c.lg.Info("starting auto revision compaction",
			zap.Int64("revision", rev), zap.Int64("revision-compaction-retention", retention))
		start := c.clock.Now()
		if err := c.compact(rev); err != nil {
			c.lg.Warn("failed auto revision compaction",
				zap.Int64("revision", rev), zap.Int64("revision-compaction-retention", retention),
				zap.Duration("retry-interval", revisionInterval), zap.Error(err))
			continue
		}
		lastRev = rev
		c.lg.Info("completed auto revision compaction",
			zap.Int64("revision", rev), zap.Int64("revision-compaction-retention", retention),
			zap.Duration("took", c.clock.Now().Sub(start)))
	}
}
