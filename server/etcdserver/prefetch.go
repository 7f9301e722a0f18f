package etcdserver

import (
	"github.com/cairnkv/cairn/pkg/syncgap"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// A restart reads the whole WAL (to find the snapshots it names) and
// either reads the key index checkpoint or rebuilds the index from the
// db: at a million keys about 0.4 s and 0.7 s, each on one core. Neither
// needs the other, so a restarting member opens the backend and the mvcc
// store in the background while bootstrapRaft reads the WAL, and the
// stores are finished (auth, lessor, applier) once both are done.

// openedKV is an opened backend with the mvcc store on it, or why not.
type openedKV struct {
	be  backend.Backend
	kv  *mvcc.Store
	err error
}

// backendHooks are what the member lends its backend: the pre-commit hook
// that stores the consistent index, and the gaps between the WAL's syncs,
// in which the backend's bulk syncs go (nil: anywhere).
type backendHooks struct {
	preCommit func(tx backend.UnsafeWriter)
	diskGaps  *syncgap.Gaps
}

// openKV opens the backend at c's db path and the mvcc store on it.
func openKV(c *Config, hooks backendHooks) openedKV {
	be, err := openBackend(c, hooks)
	if err != nil {
		return openedKV{err: err}
	}
	kv := mvcc.New(c.Logger, be, mvcc.StoreConfig{
		CompactionBatchLimit:    c.CompactionBatchLimit,
		CompactionSleepInterval: c.CompactionSleepInterval,
		IndexCheckpoint:         c.indexCheckpointPath(),
	})
	return openedKV{be: be, kv: kv}
}

// kvFuture is an openKV running in the background; nil when the member
// opens its stores only after bootstrapping raft.
type kvFuture struct {
	done   chan struct{}
	opened openedKV
	open   func() openedKV // what wait runs when there is no future
}

// prefetchKV starts openKV for a restarting member. A new member creates
// its db only once raft is bootstrapped (a failed bootstrap leaves no db
// behind), and --force-new-cluster opens the db itself while
// bootstrapping (bbolt's file lock would make the two opens wait for each
// other), so both open it in order.
func prefetchKV(c *Config, hooks backendHooks) *kvFuture {
	open := func() openedKV { return openKV(c, hooks) }
	if !c.HasWAL() || c.ForceNewCluster {
		return &kvFuture{open: open}
	}
	f := &kvFuture{done: make(chan struct{})}
	go func() {
		defer close(f.done)
		f.opened = open()
	}()
	return f
}

// wait returns the opened stores, opening them now if nothing was
// prefetched.
func (f *kvFuture) wait() openedKV {
	if f.done == nil {
		return f.open()
	}
	<-f.done
	return f.opened
}

// discard closes what the prefetch opened, after a failed bootstrap.
func (f *kvFuture) discard() {
	if f.done == nil {
		return
	}
	<-f.done
	if f.opened.err == nil {
		f.opened.kv.Close()
		f.opened.be.Close()
	}
}
