package mvcc

import (
	"runtime"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/failpoint"
	"github.com/cairnkv/cairn/pkg/wait"
	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/metrics"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// Compact makes rev the oldest readable revision. It records rev as the
// scheduled compaction in the backend batch (durable with the member's next
// commit) and returns a channel closed once a background goroutine has
// compacted the index and removed the superseded revisions from the backend.
// Call it outside any transaction: it waits until none is open.
func (s *Store) Compact(rev int64) (<-chan struct{}, error) {
	s.txnMu.Lock()
	defer s.txnMu.Unlock()
	return s.compactLocked(rev)
}

// compactLocked validates and schedules a compaction; the caller excludes
// every transaction (txnMu held, or New before the store is shared).
func (s *Store) compactLocked(rev int64) (<-chan struct{}, error) {
	s.revMu.RLock()
	compacted, current := s.compactMainRev, s.currentRev
	s.revMu.RUnlock()
	if rev <= compacted {
		return nil, errs.ErrCompacted
	}
	if rev > current {
		return nil, errs.ErrFutureRev
	}

	tx := s.b.BatchTx()
	tx.Lock()
	prevFinished := previousCompactionFinished(tx)
	putRevMeta(tx, backend.MetaScheduledCompactRev, rev)
	tx.Unlock()
	// etcd commits here; cairn leaves the commit to the member, so a crash
	// at this point finds the backend in the state etcd's name describes.
	failpoint.Inject("compactBeforeCommitScheduledCompact")

	s.revMu.Lock()
	s.compactMainRev = rev
	s.revMu.Unlock()
	return s.compactor.enqueue(compactionJob{rev: rev, prevRev: compacted, storeHash: prevFinished}), nil
}

// previousCompactionFinished reports whether the last scheduled compaction
// (if any) has also finished. Only then does the next compaction's hash cover
// every revision since the previous compacted one, and only then is it
// stored (etcd's rule, see etcd issue 15919).
func previousCompactionFinished(tx backend.UnsafeReader) bool {
	scheduled, scheduledFound := readRevMeta(tx, backend.MetaScheduledCompactRev)
	finished, finishedFound := readRevMeta(tx, backend.MetaFinishedCompactRev)
	return scheduled == finished && scheduledFound == finishedFound
}

// compactor runs scheduled compactions one after the other, in order, on one
// goroutine.
type compactor struct {
	s     *Store
	mu    sync.Mutex
	queue []compactionJob
	busy  bool          // a job was taken and has not finished (interrupted ones stay busy)
	wake  chan struct{} // capacity 1: a pending wake-up is enough
	quit  chan struct{}
	done  chan struct{}
}

type compactionJob struct {
	rev       int64
	prevRev   int64 // the compacted revision before this one (-1 if none)
	storeHash bool  // keep the hash this compaction computes (see Hashes)
	done      chan struct{}
}

func newCompactor(s *Store) *compactor {
	c := &compactor{
		s:    s,
		wake: make(chan struct{}, 1),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	go c.run()
	return c
}

func (c *compactor) enqueue(job compactionJob) <-chan struct{} {
	job.done = make(chan struct{})
	c.mu.Lock()
	c.queue = append(c.queue, job)
	c.mu.Unlock()
	wait.Wake(c.wake)
	return job.done
}

func (c *compactor) next() (compactionJob, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return compactionJob{}, false
	}
	job := c.queue[0]
	c.queue = c.queue[1:]
	c.busy = true
	return job, true
}

// finished marks the job taken by next as done.
func (c *compactor) finished() {
	c.mu.Lock()
	c.busy = false
	c.mu.Unlock()
}

// idle reports whether every scheduled compaction has finished.
func (c *compactor) idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.busy && len(c.queue) == 0
}

func (c *compactor) run() {
	defer close(c.done)
	for {
		select {
		case <-c.quit:
			return
		case <-c.wake:
		}
		for job, ok := c.next(); ok; job, ok = c.next() {
			h, ok := c.s.physicalCompact(job.rev, job.prevRev, c.quit)
			if !ok {
				return
			}
			if job.storeHash {
				c.s.hashes.store(c.s.lg, h)
			} else {
				c.s.lg.Info("previous compaction was interrupted, skip storing compaction hash value")
			}
			c.finished()
			close(job.done)
		}
	}
}

// stop interrupts the running compaction between two rounds and waits for
// the goroutine to exit.
func (c *compactor) stop() {
	close(c.quit)
	<-c.done
}

// physicalCompact compacts the index at rev, then deletes every revision up to
// rev that the index no longer needs, a batch at a time, releasing the batch
// lock in between so writers keep going. It finally records rev as the
// finished compaction. On the way it hashes the entries it visits as
// HashByRev(rev) would have before the compaction (prevRev being the
// compacted revision then), and returns that hash; ok is false if quit
// interrupted it.
func (s *Store) physicalCompact(rev, prevRev int64, quit <-chan struct{}) (_ KeyValueHash, ok bool) {
	start := time.Now()
	keep := s.index.Compact(rev)
	h := newKVHasher(prevRev, rev, keep)
	metrics.IndexCompactionPauseMs.Observe(float64(time.Since(start)) / float64(time.Millisecond))
	from := RevToBytes(Revision{})
	end := RevToBytes(Revision{Main: rev + 1})
	deleted := 0
	for {
		roundStart := time.Now()
		n, next, finished := s.compactRound(rev, keep, h, from, end)
		metrics.CompactionPauseMs.Observe(float64(time.Since(roundStart)) / float64(time.Millisecond))
		metrics.CompactionKeys.Add(float64(n))
		deleted += n
		if finished {
			failpoint.Inject("compactAfterSetFinishedCompact")
			sum := h.sum()
			metrics.CompactionTotalMs.Observe(float64(time.Since(start)) / float64(time.Millisecond))
			metrics.CompactionLast.Set(float64(time.Now().Unix()))
			s.lg.Info("finished scheduled compaction",
				zap.Int64("compact-revision", rev),
				zap.Int("deleted-revisions", deleted),
				zap.Duration("took", time.Since(start)),
				zap.Uint32("hash", sum.Hash))
			return sum, true
		}
		from = next
		// The round's deletes are in the uncommitted batch, as in etcd
		// just before it commits a compaction batch.
		failpoint.Inject("compactBeforeCommitBatch")
		if !s.pauseCompaction(quit) {
			s.lg.Info("compaction interrupted", zap.Int64("compact-revision", rev))
			return KeyValueHash{}, false
		}
	}
}

// pauseCompaction waits --compaction-sleep-interval between two rounds; it
// returns false if quit interrupted it. The round's deletes go to disk with
// the member's next periodic commit: commits no longer hold writers up
// (the backend writes them in the background), and a commit per round only
// added an fsync every round on the disk the WAL shares.
func (s *Store) pauseCompaction(quit <-chan struct{}) bool {
	timer := time.NewTimer(s.cfg.CompactionSleepInterval)
	defer timer.Stop()
	select {
	case <-quit:
		return false
	case <-timer.C:
		return true
	}
}

// compactRound deletes the superseded revisions among the next
// CompactionBatchLimit entries from `from`, hashing every entry into h
// first. It returns how many it deleted, where the next round starts and
// whether this was the last round (then it has also stored the finished
// compaction revision).
//
// The entries are read through the shared read view, without the batch
// lock: revisions up to rev are never written again, so the view holds
// them exactly as the batch would. Writers wait only while the round's
// tombstones are recorded.
func (s *Store) compactRound(rev int64, keep *revisionSet, h *kvHasher, from, end []byte) (deleted int, next []byte, finished bool) {
	limit := s.cfg.CompactionBatchLimit
	doomed, seen, last := s.readRound(keep, h, from, end, limit)
	tx := s.b.BatchTx()
	tx.Lock()
	defer tx.Unlock()
	for _, k := range doomed {
		tx.UnsafeDelete(backend.BucketKey, k)
	}
	if seen < limit {
		failpoint.Inject("compactBeforeSetFinishedCompact")
		putRevMeta(tx, backend.MetaFinishedCompactRev, rev)
		return len(doomed), nil, true
	}
	return len(doomed), RevToBytes(Revision{Main: last.Main, Sub: last.Sub + 1}), false
}

// maxPresizedDoomed bounds what readRound allocates ahead for the doomed
// keys: --compaction-batch-limit may be set far above its default.
const maxPresizedDoomed = 4096

// readRound reads up to limit entries from `from`, in chunks of
// valuesPerReadLock per hold of the read view's lock (a commit waits for
// that lock), hashes each, and returns copies of the keys the index does
// not keep, how many entries it saw and the last one's revision.
func (s *Store) readRound(keep *revisionSet, h *kvHasher, from, end []byte, limit int) (doomed [][]byte, seen int, last Revision) {
	rt := s.b.ReadTx()
	doomed = make([][]byte, 0, min(limit, maxPresizedDoomed))
	for seen < limit {
		chunk := min(valuesPerReadLock, limit-seen)
		rt.RLock()
		keys, vals := rt.UnsafeRange(backend.BucketKey, from, end, int64(chunk))
		// Hash and copy before RUnlock: keys and values are bbolt's page
		// memory, and the batch keeps deleted keys by reference. The
		// copies of a chunk share one allocation.
		var copies []byte
		for i, k := range keys {
			h.write(k, vals[i])
			if !keep.has(BytesToRev(k)) {
				if copies == nil { // room for every key, tombstones' marker byte included
					copies = make([]byte, 0, (len(k)+1)*len(keys))
				}
				copies = append(copies, k...)
				doomed = append(doomed, copies[len(copies)-len(k):len(copies):len(copies)])
			}
		}
		if len(keys) > 0 {
			last = BytesToRev(keys[len(keys)-1])
		}
		rt.RUnlock()
		// Let waiting requests run: on two cores this loop would otherwise
		// hold a processor until the scheduler preempts it (see
		// treeIndex.Compact).
		runtime.Gosched()
		seen += len(keys)
		if len(keys) < chunk {
			break
		}
		from = RevToBytes(Revision{Main: last.Main, Sub: last.Sub + 1})
	}
	return doomed, seen, last
}
