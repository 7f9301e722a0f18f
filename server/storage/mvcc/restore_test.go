package mvcc

import (
	"reflect"
	"testing"
)

func TestReopenRestoresRangesAndHash(t *testing.T) {
	cfg := testConfig
	s, b, path := newTestStore(t, cfg)
	buildHistory(s)
	txn := s.Write()
	txn.Put([]byte("d"), []byte("d9"), 42)
	txn.Put([]byte("c"), []byte("c9"), 0)
	txn.DeleteRange([]byte("a"), nil)
	txn.End()
	waitCompaction(t, mustCompact(t, s, 5))

	type snapshot struct {
		ranges map[int64][]string
		hashes map[int64]KeyValueHash
	}
	take := func(s *Store) snapshot {
		snap := snapshot{ranges: map[int64][]string{}, hashes: map[int64]KeyValueHash{}}
		for rev := int64(5); rev <= 9; rev++ {
			snap.ranges[rev] = kvString(mustRange(t, s, "", "\x00", RangeOptions{Rev: rev}).KVs)
			// hashKV: the stored compaction hashes are not kept across a
			// restart, as in etcd.
			h, _, err := s.hashKV(rev)
			if err != nil {
				t.Fatalf("HashByRev(%d): %v", rev, err)
			}
			snap.hashes[rev] = h
		}
		return snap
	}
	before := take(s)
	s2, _ := reopen(t, s, b, path, cfg)
	if s2.Rev() != 9 || s2.FirstRev() != 5 {
		t.Fatalf("reopened at rev %d, first %d; want 9, 5", s2.Rev(), s2.FirstRev())
	}
	if after := take(s2); !reflect.DeepEqual(before, after) {
		t.Fatalf("reopened store differs:\nbefore %v\nafter  %v", before, after)
	}
	// The restored index continues generations correctly.
	s2.Put([]byte("c"), []byte("c10"), 0)
	s2.Put([]byte("a"), []byte("a11"), 0)
	got := kvString(mustRange(t, s2, "a", "d", RangeOptions{}).KVs)
	want := []string{"a=a11@11/11/v1/l0", "c=c10@6/10/v3/l0"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopen and writes: %v, want %v", got, want)
	}
}

func TestReopenAfterCompactingAwayNewestRevisions(t *testing.T) {
	// Everything is deleted and compacted at the current revision: the key
	// bucket is empty, yet the revision must not go back.
	s, b, path := newTestStore(t, testConfig)
	s.Put([]byte("a"), nil, 0)              // 2
	s.Put([]byte("b"), nil, 0)              // 3
	s.DeleteRange([]byte("a"), []byte("c")) // 4
	s.Put([]byte("x"), nil, 0)              // 5
	s.DeleteRange([]byte("x"), nil)         // 6
	waitCompaction(t, mustCompact(t, s, 5))
	// Only x's tombstone survives: it is exactly at the compacted revision.
	waitCompaction(t, mustCompact(t, s, 6))
	s2, b2 := reopen(t, s, b, path, testConfig)
	if s2.Rev() != 6 || s2.FirstRev() != 6 {
		t.Fatalf("reopened at rev %d first %d, want 6, 6", s2.Rev(), s2.FirstRev())
	}
	if got := keyBucketRevs(t, b2); !reflect.DeepEqual(got, []string{"6.0t"}) {
		t.Fatalf("key bucket %v, want [6.0t]", got)
	}
	if rev := s2.Put([]byte("y"), nil, 0); rev != 7 {
		t.Fatalf("next put at %d, want 7", rev)
	}
	// The restored lone tombstone does not make x visible.
	if res := mustRange(t, s2, "x", "", RangeOptions{Rev: 6}); len(res.KVs) != 0 {
		t.Fatalf("x visible at 6: %v", kvString(res.KVs))
	}
}

func TestRestoreManyBatchesPerShard(t *testing.T) {
	// Every shard of the rebuild receives several batches.
	n := restoreBatch*restoreShards()*3 + 10
	s, b, path := newTestStore(t, testConfig)
	txn := s.Write()
	for i := range n {
		txn.Put([]byte{byte(i >> 8), byte(i)}, nil, 0)
	}
	txn.End()
	s.Put([]byte("last"), []byte("v"), 0)
	s2, _ := reopen(t, s, b, path, testConfig)
	res := mustRange(t, s2, "", "\x00", RangeOptions{Count: true})
	if res.Count != n+1 || s2.Rev() != 3 {
		t.Fatalf("restored %d keys at rev %d", res.Count, s2.Rev())
	}
}
