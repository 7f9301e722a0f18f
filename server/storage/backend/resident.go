package backend

import "go.uber.org/zap"

// DropResidentPages tells the kernel that the process no longer needs the
// pages of the db file it has touched through bbolt's read-only mapping. A
// start-up reads every page (bbolt rebuilds its freelist by walking the
// tree, mvcc rebuilds its index from the key bucket), which would otherwise
// leave the whole file in the member's resident set although it serves from
// a few hot pages. The pages stay in the kernel's page cache and are mapped
// again, without disk I/O, on the next access; nothing is lost. With
// Config.Mlock it does nothing: the file is meant to stay resident.
func (b *backend) DropResidentPages() {
	if b.cfg.Mlock {
		return
	}
	b.batch.mu.Lock()
	defer b.batch.mu.Unlock()
	if b.closed {
		return
	}
	// Under the batch lock no commit can remap the file, so the mapping at
	// Info().Data is bbolt's for the whole call.
	if err := dropMapping(b.db.Info().Data, b.size.Load()); err != nil {
		b.lg.Warn("failed to drop the db file's resident pages", zap.Error(err))
	}
}
