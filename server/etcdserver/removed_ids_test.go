package etcdserver

import "testing"

// fakeRemovedBucket is a members_removed bucket that counts its reads.
type fakeRemovedBucket struct {
	ids    []uint64
	ok     bool
	reads  int
	during func() // runs inside a read, to race with it
}

func (b *fakeRemovedBucket) load() ([]uint64, bool) {
	b.reads++
	if b.during != nil {
		b.during()
	}
	return b.ids, b.ok
}

func TestRemovedIDCacheReadsOnceUntilInvalidated(t *testing.T) {
	var c removedIDCache
	b := &fakeRemovedBucket{ids: []uint64{9, 3}, ok: true}
	for _, tt := range []struct {
		id   uint64
		want bool
	}{{3, true}, {4, false}, {9, true}} {
		if got := c.isRemoved(tt.id, b.load); got != tt.want {
			t.Errorf("isRemoved(%d) = %v, want %v", tt.id, got, tt.want)
		}
	}
	if b.reads != 1 {
		t.Fatalf("bucket read %d times, want 1", b.reads)
	}
	b.ids = append(b.ids, 4)
	c.invalidate()
	if !c.isRemoved(4, b.load) || b.reads != 2 {
		t.Fatalf("after invalidate: 4 removed %v, reads %d; want true, 2", c.isRemoved(4, b.load), b.reads)
	}
}

// A read that an invalidation overtook answers, but is not kept.
func TestRemovedIDCacheDropsARacingRead(t *testing.T) {
	var c removedIDCache
	b := &fakeRemovedBucket{ok: true}
	b.during = func() { c.invalidate() }
	if c.isRemoved(2, b.load) {
		t.Fatal("2 removed in an empty bucket")
	}
	b.during, b.ids = nil, []uint64{2}
	if !c.isRemoved(2, b.load) {
		t.Fatal("the raced read was kept: 2 not removed")
	}
	if b.reads != 2 {
		t.Fatalf("bucket read %d times, want 2", b.reads)
	}
}

func TestRemovedIDCacheKeepsNothingFromAFailedRead(t *testing.T) {
	var c removedIDCache
	b := &fakeRemovedBucket{ids: []uint64{5}}
	if c.isRemoved(5, b.load) {
		t.Fatal("a failed read said removed")
	}
	b.ok = true
	if !c.isRemoved(5, b.load) {
		t.Fatal("a failed read was cached")
	}
}
