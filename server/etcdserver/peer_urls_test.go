package etcdserver

import (
	"slices"
	"testing"
)

func TestPeerURLCache(t *testing.T) {
	var c peerURLCache
	urls := map[uint64][]string{1: {"http://a:2380"}, 2: {"http://b:2380"}}
	loads := 0
	load := func(id uint64) []string { loads++; return urls[id] }

	if got := c.get(1, load); !slices.Equal(got, urls[1]) || loads != 1 {
		t.Fatalf("first lookup: %v after %d loads", got, loads)
	}
	if got := c.get(1, load); !slices.Equal(got, urls[1]) || loads != 1 {
		t.Fatalf("second lookup: %v after %d loads, want it cached", got, loads)
	}
	if got := c.get(2, load); !slices.Equal(got, urls[2]) || loads != 2 {
		t.Fatalf("another member: %v after %d loads", got, loads)
	}
	urls[2] = []string{"http://b2:2380"}
	c.invalidate()
	if got := c.get(2, load); !slices.Equal(got, urls[2]) || loads != 3 {
		t.Fatalf("after invalidate: %v after %d loads, want the new URLs", got, loads)
	}
	if got := c.get(3, load); got != nil {
		t.Fatalf("unknown member: %v", got)
	}
	// A load that an invalidation overtakes may have read the old URLs:
	// it is returned to its caller but not kept.
	c.invalidate()
	racing := func(id uint64) []string { c.invalidate(); return []string{"http://stale:2380"} }
	if got := c.get(1, racing); !slices.Equal(got, []string{"http://stale:2380"}) {
		t.Fatalf("racing lookup returned %v", got)
	}
	if got := c.get(1, load); !slices.Equal(got, urls[1]) {
		t.Fatalf("after a racing lookup: %v, want a fresh load", got)
	}
}
