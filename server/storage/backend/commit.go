package backend

// Commits off the writers' path.
//
// The batch's writes live in memory until a commit writes them into bbolt
// (batch_tx.go). A commit has three steps, and writers wait only for the
// first and the last, each a matter of microseconds:
//
//  1. Cut (batch lock): run the PreCommit hook, publish its writes with the
//     round's, and freeze the readers' overlay of released writes: that
//     frozen set, everything released since the last commit, is what this
//     commit writes. Writes released from now on also collect in sinceCut.
//  2. Write (no lock that writers or readers take): open a bbolt write tx,
//     put and delete the frozen writes bucket by bucket in key order,
//     commit and fsync. Readers go on reading the last commit under the
//     overlay, which still holds every frozen write.
//  3. Show (batch and read locks): open a read tx on the new commit, make
//     it the readers' base, and let sinceCut become their overlay.
//
// One commit runs at a time: commitSlot is taken at the cut and given back
// once the commit is shown. Defrag's start and swap take it too, so a
// commit never writes into a file that is being replaced.
//
// bbolt grows its memory map by remapping, and a remap waits until every
// read tx has ended, the readers' base included; a commit that might grow
// the file past the map therefore takes the read lock and closes the base
// first (readers wait for that commit, as they did for every commit before).

import (
	"bytes"
	"runtime"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/failpoint"
	"github.com/cairnkv/cairn/server/metrics"
)

// writesPerYield: a commit writing many keys (a compaction's deletes, a
// burst of puts) yields its processor after every writesPerYield of them.
// It runs beside the member's requests, and on two cores a loop that never
// yields keeps them waiting until the scheduler preempts it, up to 10 ms.
const writesPerYield = 256

// maxDirtyPagesPerWrite bounds how many new pages one write can cost a
// commit (its leaf and the branches above it, and splits): with it, the
// remap check errs towards the slow path.
const maxDirtyPagesPerWrite = 8

// commitCut is what one commit writes.
type commitCut struct {
	writes     releasedWrites
	seqBuckets []string
	// journal and mark: the defrag journal running at the cut, and the end
	// of its writes then; once the commit is durable, they are committed.
	journal *defragJournal
	mark    int
}

// Commit makes every released write durable and returns when it is.
func (b *backend) Commit() { <-b.StartCommit() }

// StartCommit cuts a commit now (running the PreCommit hook) and writes it
// in the background; the channel is closed once it is durable and readers
// see it from disk. It waits first for a commit still being written.
func (b *backend) StartCommit() <-chan struct{} {
	done := make(chan struct{})
	b.commitSlot <- struct{}{}
	cut, ok := b.cut()
	if !ok {
		<-b.commitSlot
		close(done)
		return done
	}
	go func() {
		defer close(done)
		defer func() { <-b.commitSlot }()
		b.writeCommit(cut)
	}()
	return done
}

// commitNow cuts and writes a commit on the caller's goroutine; the caller
// holds commitSlot. ok is false once the backend is closed.
func (b *backend) commitNow() (ok bool) {
	cut, ok := b.cut()
	if ok {
		b.writeCommit(cut)
	}
	return ok
}

// cut is step 1; the caller holds commitSlot.
func (b *backend) cut() (*commitCut, bool) {
	t := b.batch
	t.mu.Lock()
	defer t.mu.Unlock()
	if b.closed {
		return nil, false
	}
	b.preCommit()
	t.publish()
	c := &commitCut{writes: *b.read.released.Load(), seqBuckets: t.seqBuckets}
	t.pending.Store(0)
	t.sinceCut = &releasedWrites{}
	if t.journal != nil {
		c.journal, c.mark = t.journal, t.journal.end()
	}
	return c, true
}

// preCommit runs the hook under the batch lock; its writes join the cut.
func (b *backend) preCommit() {
	if b.cfg.PreCommit != nil {
		failpoint.Inject("commitBeforePreCommitHook")
		b.cfg.PreCommit(b.batch)
		failpoint.Inject("commitAfterPreCommitHook")
	}
}

// writeCommit is steps 2 and 3; the caller holds commitSlot. A commit
// that may remap holds both locks for its whole write (readers and writers
// wait, as they did for every commit before); any other holds them only to
// show its result.
func (b *backend) writeCommit(c *commitCut) {
	slow := b.mayRemap(c)
	if slow {
		b.batch.mu.Lock()
		b.read.mu.Lock()
		b.read.close()
	}
	b.writeBolt(c)
	if !slow {
		b.batch.mu.Lock()
		b.read.mu.Lock()
	}
	old := b.read.tx
	b.show(c)
	b.read.mu.Unlock()
	b.batch.mu.Unlock()
	if old != nil {
		_ = rollbackView(old)
	}
}

// mayRemap reports whether c could grow the file past bbolt's memory map,
// which is at least the initial mmap size.
func (b *backend) mayRemap(c *commitCut) bool {
	writes, bytes := c.writes.size()
	pageSize := int64(b.db.Info().PageSize)
	grow := writes*maxDirtyPagesPerWrite*pageSize + 2*bytes + 16*pageSize
	return b.size.Load()+grow >= b.cfg.MmapSize
}

// writeBolt writes c into one bbolt transaction and commits it.
func (b *backend) writeBolt(c *commitCut) {
	tx, err := b.db.Begin(true)
	if err != nil {
		b.lg.Fatal("failed to begin a backend commit", zap.String("path", b.cfg.Path), zap.Error(err))
	}
	for _, bw := range c.writes {
		b.writeBucket(tx, bw, c.seqBuckets)
	}
	if b.commitWriting != nil {
		b.commitWriting()
	}
	start := time.Now()
	failpoint.Inject("beforeCommit")
	if err := tx.Commit(); err != nil {
		b.lg.Fatal("failed to commit the backend", zap.String("path", b.cfg.Path), zap.Error(err))
	}
	failpoint.Inject("afterCommit")
	metrics.BackendCommitSeconds.Observe(time.Since(start).Seconds())
	st := tx.Stats()
	metrics.BackendCommitRebalanceSeconds.Observe(st.GetRebalanceTime().Seconds())
	metrics.BackendCommitSpillSeconds.Observe(st.GetSpillTime().Seconds())
	metrics.BackendCommitWriteSeconds.Observe(st.GetWriteTime().Seconds())
}

// writeBucket puts and deletes the newest write of each key of bw, in key
// order, creating the bucket if it is new.
func (b *backend) writeBucket(tx *bolt.Tx, bw bucketWrites, seqBuckets []string) {
	bucket, err := tx.CreateBucketIfNotExists([]byte(bw.name))
	if err != nil {
		b.lg.Fatal("failed to create a bucket", zap.String("bucket", bw.name), zap.Error(err))
	}
	for _, name := range seqBuckets {
		if name == bw.name {
			bucket.FillPercent = seqFillPercent
		}
	}
	it := newRunsIter(bw.runs, nil, nil)
	// Deletes share one cursor: Bucket.Delete allocates a cursor and grows
	// its stack for every key, and a compaction's commit deletes hundreds
	// of thousands (those allocations were a third of what made the
	// collector run during one).
	deleter := bucket.Cursor()
	n := 0
	for w, ok := it.next(); ok; w, ok = it.next() {
		if n++; n%writesPerYield == 0 {
			runtime.Gosched()
		}
		if w.deleted {
			err = deleteAt(deleter, w.key)
		} else {
			err = bucket.Put(w.key, w.value)
		}
		if err != nil {
			b.lg.Fatal("failed to write to a bucket",
				zap.String("bucket", bw.name), zap.ByteString("key", w.key), zap.Error(err))
		}
	}
}

// deleteAt removes key through c, as Bucket.Delete does: a missing key is
// no error, a nested bucket's key is bolt's ErrIncompatibleValue.
func deleteAt(c *bolt.Cursor, key []byte) error {
	if k, _ := c.Seek(key); !bytes.Equal(k, key) {
		return nil
	}
	return c.Delete()
}

// show is step 3: the new commit becomes the readers' base and the writes
// since the cut their overlay. The caller holds the batch and read locks
// and rolls the previous base back afterwards.
func (b *backend) show(c *commitCut) {
	rtx, err := b.db.Begin(false)
	if err != nil {
		b.lg.Fatal("failed to begin a backend read tx", zap.String("path", b.cfg.Path), zap.Error(err))
	}
	b.read.tx = nil
	b.read.show(rtx)
	b.read.released.Store(b.batch.sinceCut)
	b.batch.sinceCut = nil
	if c.journal != nil && c.journal == b.batch.journal {
		c.journal.markCommitted(c.mark)
	}
	b.refreshCommitted(rtx)
}
