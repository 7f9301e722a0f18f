package backend

import (
	"math"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
)

// batchTx is the backend's single bbolt read-write transaction. It stays
// open across many Lock/Unlock rounds and is committed only by
// Backend.Commit. Every write also goes to held, which Unlock hands to the
// read view so readers see it before the bbolt commit.
type batchTx struct {
	mu sync.Mutex
	tx *bolt.Tx
	lg *zap.Logger
	// held are the writes made since Lock; readers must not see them yet.
	held []pendingWrite
	// read receives held on Unlock.
	read *readTx
	// pending counts puts and deletes since the last commit.
	pending atomic.Int64
	// journal, while a defrag runs, records every write (defrag.go).
	journal *defragJournal
}

func (t *batchTx) Lock() { t.mu.Lock() }

// Unlock publishes the writes of this round to readers, then releases the
// batch. Publishing is one atomic pointer swap: it never waits for readers.
func (t *batchTx) Unlock() {
	if len(t.held) > 0 {
		next := t.read.released.Load().withWrites(t.held)
		t.read.released.Store(&next)
		clear(t.held) // drop references so the values can be collected
		t.held = t.held[:0]
	}
	t.mu.Unlock()
}

// bucket returns bucket of the open bbolt tx, creating it if it is missing
// so that a write to a new bucket works like one to a bucket Open created.
func (t *batchTx) bucket(name []byte) *bolt.Bucket {
	if b := t.tx.Bucket(name); b != nil {
		return b
	}
	b, err := t.tx.CreateBucket(name)
	if err != nil {
		t.lg.Fatal("failed to create a bucket", zap.ByteString("bucket", name), zap.Error(err))
	}
	return b
}

// UnsafePut stores key=value in bucket. bbolt keeps key and value by
// reference until the commit, so the caller must not modify them afterwards.
func (t *batchTx) UnsafePut(bucket, key, value []byte) {
	if err := t.bucket(bucket).Put(key, value); err != nil {
		t.lg.Fatal("failed to write to a bucket",
			zap.ByteString("bucket", bucket), zap.ByteString("key", key), zap.Error(err))
	}
	t.hold(bucket, bufferedWrite{key: key, value: value})
}

// seqFillPercent is how full bbolt packs the pages of a bucket written in
// key order (etcd's value): appends never land in a full page again, so
// there is no reason to leave half of each page free.
const seqFillPercent = 0.9

func (t *batchTx) UnsafeSeqPut(bucket, key, value []byte) {
	b := t.bucket(bucket)
	// FillPercent lives on the bucket object of this bbolt tx and is read
	// when the commit spills its nodes; setting it on every put keeps it set
	// for the tx that Commit opens next.
	b.FillPercent = seqFillPercent
	if err := b.Put(key, value); err != nil {
		t.lg.Fatal("failed to write to a bucket",
			zap.ByteString("bucket", bucket), zap.ByteString("key", key), zap.Error(err))
	}
	t.hold(bucket, bufferedWrite{key: key, value: value})
}

func (t *batchTx) UnsafeDelete(bucket, key []byte) {
	if b := t.tx.Bucket(bucket); b != nil {
		if err := b.Delete(key); err != nil {
			t.lg.Fatal("failed to delete a key",
				zap.ByteString("bucket", bucket), zap.ByteString("key", key), zap.Error(err))
		}
	}
	t.hold(bucket, bufferedWrite{key: key, deleted: true})
}

func (t *batchTx) hold(bucket []byte, w bufferedWrite) {
	t.held = append(t.held, pendingWrite{bucket: bucket, write: w})
	t.pending.Add(1)
	if t.journal != nil {
		t.journal.record(bucket, w)
	}
}

// UnsafeRange reads the bbolt tx directly: it already holds every write of
// the batch, released or not.
func (t *batchTx) UnsafeRange(bucket, key, endKey []byte, limit int64) (keys, vals [][]byte) {
	b := t.tx.Bucket(bucket)
	if b == nil {
		return nil, nil
	}
	if len(endKey) == 0 {
		if v := b.Get(key); v != nil {
			return [][]byte{key}, [][]byte{v}
		}
		return nil, nil
	}
	if limit <= 0 {
		limit = math.MaxInt64
	}
	it := newCommittedIter(b.Cursor(), key, endKey)
	for ; it.key != nil && int64(len(keys)) < limit; it.next() {
		keys = append(keys, it.key)
		vals = append(vals, it.val)
	}
	return keys, vals
}

func (t *batchTx) UnsafeForEach(bucket []byte, visit func(k, v []byte) error) error {
	b := t.tx.Bucket(bucket)
	if b == nil {
		return nil
	}
	return b.ForEach(visit)
}

// discardHeld forgets the writes of the current round after a commit made
// them durable; the new read view shows them from disk.
func (t *batchTx) discardHeld() {
	clear(t.held)
	t.held = t.held[:0]
	t.pending.Store(0)
}
