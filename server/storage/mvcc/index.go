package mvcc

import (
	"runtime"
	"sync"

	"github.com/google/btree"
)

// treeIndex maps every key that still has readable revisions to its
// keyIndex, in key order. It has its own lock so that readers only contend
// with the writer for the duration of one index operation.
type treeIndex struct {
	mu   sync.RWMutex
	tree *btree.BTreeG[*keyIndex]
}

func keyIndexLess(a, b *keyIndex) bool { return a.key < b.key }

// probes recycles the keyIndex values that lookups compare with: passing one
// to the tree's comparison function moves it to the heap, which would cost
// an allocation per read and per write.
var probes = sync.Pool{New: func() any { return new(keyIndex) }}

// withProbe calls f with a keyIndex that views key's bytes without copying;
// it must not be kept after f returns.
func withProbe[T any](key []byte, f func(p *keyIndex) T) T {
	p := probes.Get().(*keyIndex)
	p.key = unsafeString(key)
	defer func() {
		p.key = ""
		probes.Put(p)
	}()
	return f(p)
}

// find returns the keyIndex of key. The caller holds mu.
func (ti *treeIndex) find(key []byte) (*keyIndex, bool) {
	ki := withProbe(key, func(p *keyIndex) *keyIndex {
		found, _ := ti.tree.Get(p)
		return found
	})
	return ki, ki != nil
}

func newTreeIndex() *treeIndex {
	return &treeIndex{tree: btree.NewG(32, keyIndexLess)}
}

// keyRange is a normalized range argument: end == nil selects the single key,
// unbounded selects every key >= key.
type keyRange struct {
	key, end  []byte
	unbounded bool
}

// newKeyRange applies etcd's range conventions: a nil end means the single
// key; an end of "\x00" (or a non-nil empty end) means no upper bound.
func newKeyRange(key, end []byte) keyRange {
	if end != nil && (len(end) == 0 || (len(end) == 1 && end[0] == 0)) {
		return keyRange{key: key, unbounded: true}
	}
	return keyRange{key: key, end: end}
}

func (r keyRange) single() bool { return r.end == nil && !r.unbounded }

// visit calls f for each keyIndex in r, in key order, until f returns false.
// The caller holds mu.
func (ti *treeIndex) visit(r keyRange, f func(ki *keyIndex) bool) {
	if r.single() {
		if ki, ok := ti.find(r.key); ok {
			f(ki)
		}
		return
	}
	end := unsafeString(r.end)
	ti.tree.AscendGreaterOrEqual(&keyIndex{key: unsafeString(r.key)}, func(ki *keyIndex) bool {
		if !r.unbounded && ki.key >= end {
			return false
		}
		return f(ki)
	})
}

// Get returns the revision of key visible at atRev, its creation revision and
// its version then.
func (ti *treeIndex) Get(key []byte, atRev int64) (modified, created Revision, ver int64, err error) {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	ki, ok := ti.find(key)
	if !ok {
		return Revision{}, Revision{}, 0, errRevisionNotFound
	}
	return ki.get(atRev)
}

// Revisions returns the revisions of the keys in [key, end) that are live at
// atRev, at most limit of them (all if limit <= 0), and how many there are in
// total.
func (ti *treeIndex) Revisions(key, end []byte, atRev int64, limit int) (revs []Revision, total int) {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	ti.visit(newKeyRange(key, end), func(ki *keyIndex) bool {
		if rev, _, _, err := ki.get(atRev); err == nil {
			if limit <= 0 || len(revs) < limit {
				revs = append(revs, rev)
			}
			total++
		}
		return true
	})
	return revs, total
}

// CountRevisions returns how many keys in [key, end) are live at atRev.
func (ti *treeIndex) CountRevisions(key, end []byte, atRev int64) int {
	_, total := ti.Revisions(key, end, atRev, 1)
	return total
}

// Range returns the keys in [key, end) live at atRev and their revisions.
func (ti *treeIndex) Range(key, end []byte, atRev int64) (keys [][]byte, revs []Revision) {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	ti.visit(newKeyRange(key, end), func(ki *keyIndex) bool {
		if rev, _, _, err := ki.get(atRev); err == nil {
			keys = append(keys, ki.keyBytes())
			revs = append(revs, rev)
		}
		return true
	})
	return keys, revs
}

// Put records a change of key at rev and returns the main revision that
// created the key's current generation and the key's version, both
// counting this change. The key is copied when it is new to the index, so
// callers may reuse their buffers.
func (ti *treeIndex) Put(key []byte, rev Revision) (created, ver int64) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ki, ok := ti.find(key)
	if !ok {
		ki = newKeyIndex(key)
		ti.tree.ReplaceOrInsert(ki)
	}
	ki.put(rev)
	return ki.cur.created, ki.cur.ver
}

// Tombstone records the deletion of key at rev; errRevisionNotFound if the
// key is not live.
func (ti *treeIndex) Tombstone(key []byte, rev Revision) error {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ki, ok := ti.find(key)
	if !ok {
		return errRevisionNotFound
	}
	return ki.tombstone(rev)
}

// compactKeysPerLock is how many keys Compact compacts per hold of the
// index lock: a few microseconds of work, so a read or write waits at most
// that long.
const compactKeysPerLock = 64

// Compact drops every revision no read at rev or later can see, removes keys
// with nothing left, and returns the revisions at or before rev that must
// stay in the backend. It walks a clone of the tree and locks the index for
// compactKeysPerLock keys at a time, yielding its processor in between: a
// loop that takes the lock again at once keeps it from a waiting writer
// (the mutex lets the running goroutine barge in until a waiter has starved
// for a millisecond), and on two cores a busy loop also keeps requests
// from running until the scheduler preempts it.
func (ti *treeIndex) Compact(rev int64) *revisionSet {
	ti.mu.Lock() // Clone changes the tree's copy-on-write context
	clone := ti.tree.Clone()
	keep := newRevisionSet(ti.tree.Len()) // about one kept revision per key
	ti.mu.Unlock()

	chunk := make([]*keyIndex, 0, compactKeysPerLock)
	flush := func() {
		ti.mu.Lock()
		for _, ki := range chunk {
			// A key the clone still holds may have been re-created or
			// changed since; the keyIndex pointer is shared, so compacting
			// it is right.
			if !ki.isEmpty() {
				ki.compact(rev, keep)
			}
			if ki.isEmpty() {
				ti.tree.Delete(ki)
			}
		}
		ti.mu.Unlock()
		chunk = chunk[:0]
		runtime.Gosched()
	}
	clone.Ascend(func(ki *keyIndex) bool {
		if chunk = append(chunk, ki); len(chunk) == compactKeysPerLock {
			flush()
		}
		return true
	})
	flush()
	return keep.seal()
}

// Keep returns the revisions at or before rev that a compaction at rev would
// keep, leaving out a tombstone exactly at rev (see keyIndex.keep).
func (ti *treeIndex) Keep(rev int64) *revisionSet {
	ti.mu.RLock()
	keep := newRevisionSet(ti.tree.Len())
	ti.tree.Ascend(func(ki *keyIndex) bool {
		ki.keep(rev, keep)
		return true
	})
	ti.mu.RUnlock()
	return keep.seal() // sorted outside the lock
}

// Since returns, per key in [key, end), the revisions with Main >= rev; for
// watchers catching up from the backend.
func (ti *treeIndex) Since(key, end []byte, rev int64) []Revision {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	var revs []Revision
	ti.visit(newKeyRange(key, end), func(ki *keyIndex) bool {
		revs = append(revs, ki.since(rev)...)
		return true
	})
	return revs
}

// Len is the number of keys in the index, deleted ones not yet compacted included.
func (ti *treeIndex) Len() int {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	return ti.tree.Len()
}
