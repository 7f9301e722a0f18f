package backend

import (
	"bytes"
	"math"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"

	"github.com/cairnkv/cairn/server/metrics"
)

// readTx is the backend's one shared read view: a bbolt read transaction on
// the last commit, overlaid with the writes the batch has released since.
// Readers hold mu for reading; only a commit (when it shows its result, or
// for its whole write if it may remap the file) and Defrag take it
// exclusively, to swap the bbolt tx. Unlock publishes released writes
// without it, so a writer never waits for readers.
type readTx struct {
	mu sync.RWMutex
	// tx and buckets are replaced only under mu.Lock. A read-only bbolt tx
	// does not mutate itself while being read, so RLock holders share it.
	tx      *bolt.Tx
	buckets map[string]*bolt.Bucket
	// released holds the writes unlocked by the batch but not yet committed;
	// each value stored is immutable.
	released atomic.Pointer[releasedWrites]
}

func newReadTx() *readTx {
	rt := &readTx{buckets: make(map[string]*bolt.Bucket)}
	rt.released.Store(&releasedWrites{})
	return rt
}

// releasedRuns returns the released writes of bucket. A caller loads them
// once per operation so that one range sees one consistent set.
func (rt *readTx) releasedRuns(bucket []byte) bucketRuns {
	return rt.released.Load().of(bucket)
}

func (rt *readTx) RLock()   { rt.mu.RLock() }
func (rt *readTx) RUnlock() { rt.mu.RUnlock() }

// reopen replaces the bbolt tx with tx and forgets the released writes,
// which tx now contains. The caller holds mu exclusively.
func (rt *readTx) reopen(tx *bolt.Tx) {
	rt.released.Store(&releasedWrites{})
	rt.show(tx)
}

// show makes tx the committed state under the released writes, which it
// keeps: a defrag swaps in a file holding the same commit. The caller holds
// mu exclusively and has closed the previous tx.
func (rt *readTx) show(tx *bolt.Tx) {
	rt.tx = tx
	metrics.OpenReadTxns.Inc()
	clear(rt.buckets)
	// Open every bucket now so that concurrent readers only read the map.
	_ = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		rt.buckets[string(name)] = b
		return nil
	})
}

// close rolls back the bbolt tx; the caller holds mu exclusively.
func (rt *readTx) close() {
	if rt.tx != nil {
		_ = rt.tx.Rollback()
		rt.tx = nil
		metrics.OpenReadTxns.Dec()
	}
	clear(rt.buckets)
}

func (rt *readTx) committedCursor(bucket []byte) *bolt.Cursor {
	b := rt.buckets[string(bucket)]
	if b == nil {
		return nil
	}
	return b.Cursor()
}

// maxPresizedRange bounds what UnsafeRange allocates ahead for a limit: a
// client's large limit over a few keys must not cost a large allocation.
const maxPresizedRange = 256

func (rt *readTx) UnsafeRange(bucket, key, endKey []byte, limit int64) (keys, vals [][]byte) {
	if len(endKey) == 0 {
		return rt.get(bucket, key)
	}
	if limit <= 0 {
		limit = math.MaxInt64
	} else {
		// A bounded range usually fills its limit (compaction and catch-up
		// read in chunks): size for it once instead of growing from zero.
		keys = make([][]byte, 0, min(limit, maxPresizedRange))
		vals = make([][]byte, 0, min(limit, maxPresizedRange))
	}
	collect := func(k, v []byte) bool {
		keys = append(keys, k)
		vals = append(vals, v)
		return int64(len(keys)) < limit
	}
	mergeRange(rt.committedCursor(bucket), rt.releasedRuns(bucket), key, endKey, collect)
	return keys, vals
}

// get looks key up in the released writes first: they are newer than
// anything committed, and a tombstone there means the key is gone.
func (rt *readTx) get(bucket, key []byte) (keys, vals [][]byte) {
	return lookup(rt.buckets[string(bucket)], rt.releasedRuns(bucket), key)
}

// lookup finds key in runs (newest first), else in the committed bucket
// (nil when it has none).
func lookup(committed *bolt.Bucket, runs bucketRuns, key []byte) (keys, vals [][]byte) {
	if w, ok := runs.get(key); ok {
		if w.deleted {
			return nil, nil
		}
		return [][]byte{w.key}, [][]byte{w.value}
	}
	if committed == nil {
		return nil, nil
	}
	if v := committed.Get(key); v != nil {
		return [][]byte{key}, [][]byte{v}
	}
	return nil, nil
}

func (rt *readTx) UnsafeForEach(bucket []byte, visit func(k, v []byte) error) error {
	var err error
	mergeRange(rt.committedCursor(bucket), rt.releasedRuns(bucket), nil, nil, func(k, v []byte) bool {
		err = visit(k, v)
		return err == nil
	})
	return err
}

// committedIter walks committed pairs in [from, end) (end nil = unbounded).
type committedIter struct {
	cursor   *bolt.Cursor
	end      []byte
	key, val []byte
}

func newCommittedIter(c *bolt.Cursor, from, end []byte) *committedIter {
	it := &committedIter{cursor: c, end: end}
	if c == nil {
		return it
	}
	if len(from) == 0 {
		it.key, it.val = c.First()
	} else {
		it.key, it.val = c.Seek(from)
	}
	it.clip()
	return it
}

func (it *committedIter) next() {
	it.key, it.val = it.cursor.Next()
	it.clip()
}

func (it *committedIter) clip() {
	if it.key != nil && it.end != nil && bytes.Compare(it.key, it.end) >= 0 {
		it.key, it.val = nil, nil
	}
}

// mergeRange calls emit, in key order, for every pair in [from, end) that is
// visible through committed (may be nil) overlaid with released: a released
// write replaces the committed pair of the same key, a released tombstone
// hides it. It stops as soon as emit returns false.
func mergeRange(committed *bolt.Cursor, released bucketRuns, from, end []byte, emit func(k, v []byte) bool) {
	it := newCommittedIter(committed, from, end)
	rel := newRunsIter(released, from, end)
	w, ok := rel.next()
	for it.key != nil || ok {
		if !ok || (it.key != nil && bytes.Compare(it.key, w.key) < 0) {
			if !emit(it.key, it.val) {
				return
			}
			it.next()
			continue
		}
		if it.key != nil && bytes.Equal(it.key, w.key) {
			it.next()
		}
		if !w.deleted && !emit(w.key, w.value) {
			return
		}
		w, ok = rel.next()
	}
}
