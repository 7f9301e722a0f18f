package etcdserver

import (
	"sync"
	"time"

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
	// rounds carries the compactor's requests for a commit between two
	// rounds to run (see commitCompactionRound).
	rounds   chan chan struct{}
	interval time.Duration // --backend-batch-interval
	stop     <-chan struct{}
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

// run commits the backend every --backend-batch-interval, and at
// once when the compactor asks (commitCompactionRound).
func (c *backendCommits) run() {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			c.commit(false)
		case done := <-c.rounds:
			c.commit(false)
			close(done)
		case <-c.stop:
			return
		}
	}
}

// commitCompactionRound is the mvcc store's CommitRound: it has run
// commit (under applyMu, like every commit of this package) and waits for
// it. The compactor must not take applyMu itself: Stop and snapshot
// installation close the store while holding it, and wait for the
// compactor, which then leaves through quit.
func (c *backendCommits) commitCompactionRound(quit <-chan struct{}) {
	done := make(chan struct{})
	select {
	case c.rounds <- done:
	case <-quit:
		return
	case <-c.stop:
		return
	}
	select {
	case <-done:
	case <-quit:
	case <-c.stop:
	}
}

// commit commits when there is something to commit (or always when
// force is set).
func (c *backendCommits) commit(force bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if force || c.stores.be.PendingWrites() > 0 {
		c.stores.be.Commit()
	}
}
