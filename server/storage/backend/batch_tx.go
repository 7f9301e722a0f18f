package backend

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
)

// batchTx is the backend's single write transaction. Its writes never touch
// bbolt: they are held in memory until Unlock hands them to the read view
// (the released overlay on top of the last commit), and a commit later
// writes what was released into bbolt in the background (commit.go), so a
// writer never waits for bbolt's write or fsync.
type batchTx struct {
	mu sync.Mutex
	lg *zap.Logger
	// held are the writes made since Lock; readers must not see them yet.
	held []pendingWrite
	// read receives held on Unlock.
	read *readTx
	// pending counts puts and deletes since the last commit's cut.
	pending atomic.Int64
	// journal, while a defrag runs, records every write (defrag.go).
	journal *defragJournal
	// sinceCut, while a commit is being written, collects the writes
	// released after its cut: they become the readers' overlay once the
	// commit is shown. nil when no commit is in flight.
	sinceCut *releasedWrites
	// seqBuckets are the buckets written with UnsafeSeqPut; commits pack
	// their pages fuller (see seqFillPercent).
	seqBuckets []string
}

func (t *batchTx) Lock() { t.mu.Lock() }

// Unlock publishes the writes of this round to readers, then releases the
// batch. Publishing is one atomic pointer swap: it never waits for readers.
func (t *batchTx) Unlock() {
	t.publish()
	t.mu.Unlock()
}

// publish hands the held writes to the read view (and to the writes since
// the cut of a commit in flight). The caller holds mu.
func (t *batchTx) publish() {
	if len(t.held) == 0 {
		return
	}
	runs := sortedRuns(t.held)
	next := t.read.released.Load().withRuns(runs)
	t.read.released.Store(&next)
	if t.sinceCut != nil {
		since := t.sinceCut.withRuns(runs)
		t.sinceCut = &since
	}
	clear(t.held) // drop references so the values can be collected
	t.held = t.held[:0]
}

// UnsafePut stores key=value in bucket. The batch keeps key and value by
// reference until they are committed, so the caller must not modify them
// afterwards.
func (t *batchTx) UnsafePut(bucket, key, value []byte) {
	t.hold(bucket, bufferedWrite{key: key, value: value})
}

// seqFillPercent is how full bbolt packs the pages of a bucket written in
// key order: every write lands after the bucket's last key, never in a page
// already written, so a page needs no room left for later inserts. etcd
// leaves a tenth of each such page free (0.9); packing them full makes the
// key bucket, most of the file, about a tenth smaller than etcd's with the
// same data. Deletes (compaction) empty pages as before; bbolt merges a
// page once it falls below a quarter full.
const seqFillPercent = 1.0

func (t *batchTx) UnsafeSeqPut(bucket, key, value []byte) {
	if !slices.Contains(t.seqBuckets, string(bucket)) {
		t.seqBuckets = append(slices.Clip(t.seqBuckets), string(bucket))
	}
	t.hold(bucket, bufferedWrite{key: key, value: value})
}

func (t *batchTx) UnsafeDelete(bucket, key []byte) {
	t.hold(bucket, bufferedWrite{key: key, deleted: true})
}

func (t *batchTx) hold(bucket []byte, w bufferedWrite) {
	t.held = append(t.held, pendingWrite{bucket: bucket, write: w})
	t.pending.Add(1)
	if t.journal != nil {
		t.journal.record(bucket, w)
	}
}

// visibleRuns are the writes of bucket the batch sees on top of the last
// commit: the released ones and, newest, its own held ones. The caller
// holds mu, which also keeps the read view's commit from being replaced.
func (t *batchTx) visibleRuns(bucket []byte) bucketRuns {
	runs := t.read.releasedRuns(bucket)
	if mine := heldRun(t.held, bucket); len(mine) > 0 {
		return append(runs[:len(runs):len(runs)], mine)
	}
	return runs
}

// UnsafeRange sees every write of the batch, released or held, over the
// last commit.
func (t *batchTx) UnsafeRange(bucket, key, endKey []byte, limit int64) (keys, vals [][]byte) {
	runs := t.visibleRuns(bucket)
	if len(endKey) == 0 {
		return lookup(t.read.buckets[string(bucket)], runs, key)
	}
	if limit <= 0 {
		limit = math.MaxInt64
	}
	mergeRange(t.read.committedCursor(bucket), runs, key, endKey, func(k, v []byte) bool {
		keys = append(keys, k)
		vals = append(vals, v)
		return int64(len(keys)) < limit
	})
	return keys, vals
}

func (t *batchTx) UnsafeForEach(bucket []byte, visit func(k, v []byte) error) error {
	var err error
	mergeRange(t.read.committedCursor(bucket), t.visibleRuns(bucket), nil, nil, func(k, v []byte) bool {
		err = visit(k, v)
		return err == nil
	})
	return err
}
