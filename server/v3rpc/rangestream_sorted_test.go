package v3rpc

import (
	"bytes"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// TestRangeStreamSortedPagesPacing: with sort order NONE and a target other
// than KEY, every page is one chunk, the pages' limits follow etcd's
// pacing (10, then doubling while pages stay small, capped by the client's
// limit), each page starts after the last key of the previous chunk, and
// only the last chunk carries header, More and Count.
func TestRangeStreamSortedPagesPacing(t *testing.T) {
	tests := []struct {
		name       string
		limit      int64
		wantLimits []int64
		wantMore   bool
		wantCount  int64
	}{
		{"all", 0, []int64{10, 20, 40, 80, 160, 320, 640, 1280}, false, 2500},
		{"limit", 100, []int64{10, 20, 40, 30}, true, 2500},
		{"limit in first page", 3, []int64{3}, true, 2500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fakeWithKeys(2500, 10)
			c := serveFake(t, f, Config{})
			req := &pb.RangeRequest{Key: []byte("key"), RangeEnd: []byte("kez"), SortTarget: pb.RangeRequest_MOD, Limit: tt.limit}
			chunks, err := receiveAll(t, c, req)
			if err != nil {
				t.Fatal(err)
			}
			pages := f.rangeLog()
			var countPages int
			for _, p := range pages {
				if p.CountOnly {
					countPages++
				}
			}
			pages = pages[:len(pages)-countPages]
			if len(pages) != len(tt.wantLimits) || len(chunks) != len(pages) {
				t.Fatalf("%d pages, %d chunks, want %d of each", len(pages), len(chunks), len(tt.wantLimits))
			}
			for i, p := range pages {
				if p.Limit != tt.wantLimits[i] {
					t.Errorf("page %d limit %d, want %d", i, p.Limit, tt.wantLimits[i])
				}
				if i > 0 {
					prev := chunks[i-1].Kvs
					if want := keyAfter(prev[len(prev)-1].Key); !bytes.Equal(p.Key, want) || !p.Serializable || p.Revision == 0 {
						t.Errorf("page %d: key %q serializable %v rev %d; want key %q, serializable at a pinned revision", i, p.Key, p.Serializable, p.Revision, want)
					}
				}
				if int64(len(chunks[i].Kvs)) != p.Limit && i < len(pages)-1 {
					t.Errorf("chunk %d has %d kvs, page limit %d", i, len(chunks[i].Kvs), p.Limit)
				}
			}
			for i, ch := range chunks[:len(chunks)-1] {
				if ch.Header != nil || ch.More || ch.Count != 0 {
					t.Errorf("chunk %d carries metadata", i)
				}
			}
			last := chunks[len(chunks)-1]
			if last.Header == nil || last.More != tt.wantMore || last.Count != tt.wantCount {
				t.Errorf("last chunk header=%v more=%v count=%d, want a header, more=%v count=%d", last.Header, last.More, last.Count, tt.wantMore, tt.wantCount)
			}
		})
	}
}

func TestNextSortedPageLimit(t *testing.T) {
	for _, tt := range []struct {
		limit        int64
		size, target int
		want         int64
	}{
		{10, 100, 1000, 20},
		{10, 500, 1000, 10},
		{10, 2000, 1000, 10},
		{10, 2001, 1000, 5},
		{1, 5000, 1000, 1},
	} {
		if got := nextSortedPageLimit(tt.limit, tt.size, tt.target); got != tt.want {
			t.Errorf("nextSortedPageLimit(%d, %d, %d) = %d, want %d", tt.limit, tt.size, tt.target, got, tt.want)
		}
	}
}
