package mvcc

import (
	"fmt"
	"math/rand"
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

// indexDump renders every key of ti with its generations. Creation revision
// and version are left out for a generation whose only revision is its
// tombstone: no read can see them, and the backend does not keep them (etcd
// restores such a generation with an unknown creation revision too).
func indexDump(ti *treeIndex) []string {
	var out []string
	ti.tree.Ascend(func(ki *keyIndex) bool {
		line := fmt.Sprintf("%q mod=%v:", ki.key, ki.modified())
		gens := ki.allGenerations()
		for gi, g := range gens {
			tombstoneOnly := gi < len(gens)-1 && len(g.revs) == 1
			if tombstoneOnly || g.isEmpty() {
				line += fmt.Sprintf(" {%v}", g.revs)
			} else {
				line += fmt.Sprintf(" {c=%v v=%d %v}", g.created, g.ver, g.revs)
			}
		}
		out = append(out, line)
		return true
	})
	return out
}

// liveLeases lists the live keys of s that name a lease, in key order.
func liveLeases(t *testing.T, s *Store) []LeasedKey {
	t.Helper()
	var leased []LeasedKey
	for _, kv := range mustRange(t, s, "", "\x00", RangeOptions{}).KVs {
		if kv.Lease != 0 {
			leased = append(leased, LeasedKey{Key: kv.Key, Lease: kv.Lease})
		}
	}
	return leased
}

// TestRebuiltIndexEqualsLiveIndex runs randomized histories (transactions of
// puts with and without leases, deletes and range deletes, compactions) and
// then rebuilds the index from the backend with one shard and with several:
// every key's generations must equal those of the index the writes built,
// the leased keys must be the live ones, and a store reopened on the backend
// must give the same HashKV.
func TestRebuiltIndexEqualsLiveIndex(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rnd := rand.New(rand.NewSource(seed))
			s, b, path := newTestStore(t, testConfig)
			for range 400 {
				if rnd.Intn(100) < 5 && s.Rev() > max(s.FirstRev()+1, 2) {
					low := max(s.FirstRev()+1, 2)
					waitCompaction(t, mustCompact(t, s, low+rnd.Int63n(s.Rev()-low+1)))
					continue
				}
				ops := make([]modelOp, 1+rnd.Intn(4))
				for i := range ops {
					ops[i] = randomOp(rnd)
				}
				applyOps(s, ops)
			}
			live := indexDump(s.index)
			wantLeases := liveLeases(t, s)
			for _, shards := range []int{1, 3, 8} {
				ti := newTreeIndex()
				got, err := rebuildIndexShards(nil, b.ReadTx(), ti, shards)
				if err != nil {
					t.Fatal(err)
				}
				if rebuilt := indexDump(ti); !reflect.DeepEqual(rebuilt, live) {
					t.Fatalf("%d shards: rebuilt index differs\nlive:    %q\nrebuilt: %q", shards, live, rebuilt)
				}
				if !reflect.DeepEqual(got.leased, wantLeases) {
					t.Fatalf("%d shards: leased keys %v, want %v", shards, got.leased, wantLeases)
				}
			}
			before, _, err := s.HashByRev(0)
			if err != nil {
				t.Fatal(err)
			}
			s2, _ := reopen(t, s, b, path, testConfig)
			if after, _, _ := s2.HashByRev(0); after != before {
				t.Fatalf("HashKV changed across reopen: %+v -> %+v", before, after)
			}
			if reopened := indexDump(s2.index); !reflect.DeepEqual(reopened, live) {
				t.Fatalf("reopened index differs\nlive:     %q\nreopened: %q", live, reopened)
			}
		})
	}
}
