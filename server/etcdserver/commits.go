package etcdserver

import (
	"sync"
	"time"

	"github.com/cairnkv/cairn/pkg/wait"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// backendCommits owns the apply lock and the consistent index, and commits
// the backend. The lock (mu, applyMu in the doc) is held while an entry is
// applied (the apply loop takes it itself) and while the backend commits,
// so a commit never separates data from the consistent index that
// describes it: the backend's pre-commit hook (saveConsistentIndex) writes
// the index into the same transaction. The apply loop also holds it while
// it replaces the stores, so a commit here always finds the current
// backend.
type backendCommits struct {
	mu     sync.Mutex
	index  uint64 // the consistent index; guarded by mu
	term   uint64 // its entry's term; guarded by mu
	stores *stores
	// kick asks run for a commit now (the batch limit was reached);
	// capacity 1, a pending kick is enough.
	kick     chan struct{}
	interval time.Duration // --backend-batch-interval
	stop     <-chan struct{}

	// started serializes the background commits' starts, and inflight is
	// the last one's done channel: a start waits for it before it takes
	// the apply lock, so the lock is never held while a commit is written.
	started  sync.Mutex
	inflight <-chan struct{}
}

// withApplyLock runs f on the backend while no entry is applied and no
// commit runs.
func (c *backendCommits) withApplyLock(f func(be backend.Backend)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c.stores.be)
}

// saveConsistentIndex is the backend's pre-commit hook; it runs inside
// Backend.Commit, which this package calls only under applyMu.
func (c *backendCommits) saveConsistentIndex(tx backend.UnsafeWriter) {
	backend.PutUint64(tx, backend.BucketMeta, backend.MetaConsistentIndex, c.index)
	backend.PutUint64(tx, backend.BucketMeta, backend.MetaTerm, c.term)
}

// run commits the backend every --backend-batch-interval, and at once
// when the batch limit is reached (kickCommit). Its commits hold the apply
// lock only for the cut.
func (c *backendCommits) run() {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			c.commitInBackground()
		case <-c.kick:
			c.commitInBackground()
		case <-c.stop:
			return
		}
	}
}

// commitInBackground cuts a commit under the apply lock, so that the
// consistent index it stores describes exactly the entries applied, then
// waits until it is durable without the lock: entries go on being applied
// while bbolt writes and fsyncs (see backend/commit.go).
func (c *backendCommits) commitInBackground() {
	if c.stores.be.PendingWrites() == 0 {
		return // read without the lock: a write missed now waits for the next tick
	}
	<-c.startCommit()
}

// kickCommit asks run for a commit without waiting for it.
func (c *backendCommits) kickCommit() {
	wait.Wake(c.kick)
}

// startCommit cuts a commit under the apply lock and returns without
// waiting for it: the channel is closed once everything applied before
// the call is durable. It first waits, without the lock, for the commit
// it started last (the backend writes one at a time, and its cut would
// otherwise wait for that one with the apply loop locked out). Commits
// made wholly under the lock (commit, withApplyLock) are rare: a stop, a
// snapshot install, maintenance.
func (c *backendCommits) startCommit() <-chan struct{} {
	c.started.Lock()
	defer c.started.Unlock()
	if c.inflight != nil {
		<-c.inflight
	}
	c.mu.Lock()
	done := c.stores.be.StartCommit()
	c.mu.Unlock()
	c.inflight = done
	return done
}

// commit commits and waits for it under the apply lock (a snapshot needs
// the db on disk to cover everything applied).
func (c *backendCommits) commit() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stores.be.Commit()
}
