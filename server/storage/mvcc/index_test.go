package mvcc

import (
	"fmt"
	"slices"
	"testing"
)

// TestTreeIndexCompactCoversEveryChunk compacts an index of several lock
// chunks' worth of keys (with a partial last chunk): every key must be
// compacted as it would be alone, keys left empty removed, and the keep
// set the union of every key's.
func TestTreeIndexCompactCoversEveryChunk(t *testing.T) {
	const keys = 3*compactKeysPerLock + 5
	build := func() *treeIndex {
		ti := newTreeIndex()
		rev := int64(1)
		for round := 0; round < 3; round++ {
			for i := 0; i < keys; i++ {
				if round == 2 && i%3 == 0 && i%2 == 0 {
					continue // ... and half of those stay deleted
				}
				key := []byte(fmt.Sprintf("k%04d", i))
				ti.Put(key, Revision{Main: rev})
				rev++
				if round == 1 && i%3 == 0 { // every third key is deleted ...
					if err := ti.Tombstone(key, Revision{Main: rev}); err != nil {
						t.Fatal(err)
					}
					rev++
				}
			}
		}
		return ti
	}
	const atRev = 2*keys + keys/3 + 40 // inside the third round: some keys re-created, some not yet
	want := &revisionSet{}
	wantLive := 0
	ref := build()
	ref.tree.Ascend(func(ki *keyIndex) bool {
		ki.compact(atRev, want)
		if !ki.isEmpty() {
			wantLive++
		}
		return true
	})

	ti := build()
	got := ti.Compact(atRev)
	if !slices.Equal(sortedRevs(got), sortedRevs(want)) {
		t.Errorf("keep set: %d revisions, want %d (first differences matter)", got.len(), want.len())
	}
	if ti.Len() != wantLive {
		t.Errorf("%d keys left in the index, want %d", ti.Len(), wantLive)
	}
	if wantLive == keys {
		t.Fatalf("test is too weak: no key was emptied by the compaction")
	}
}
