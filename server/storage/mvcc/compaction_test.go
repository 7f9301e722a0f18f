package mvcc

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// keyBucketRevs lists the revisions stored in the key bucket, tombstones
// marked with a trailing "t".
func keyBucketRevs(tb testing.TB, b backend.Backend) []string {
	tb.Helper()
	tx := b.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	var out []string
	tx.UnsafeForEach(backend.BucketKey, func(k, _ []byte) error {
		s := BytesToRev(k).String()
		if IsTombstone(k) {
			s += "t"
		}
		out = append(out, s)
		return nil
	})
	return out
}

func metaRev(tb testing.TB, b backend.Backend, name []byte) int64 {
	tb.Helper()
	tx := b.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	rev, _ := readRevMeta(tx, name)
	return rev
}

// buildHistory writes: a@2 a@3 b@4 del(a)@5 c@6 del(b)@7 a@8.
func buildHistory(s *Store) {
	s.Put([]byte("a"), []byte("a2"), 0)
	s.Put([]byte("a"), []byte("a3"), 0)
	s.Put([]byte("b"), []byte("b4"), 0)
	s.DeleteRange([]byte("a"), nil)
	s.Put([]byte("c"), []byte("c6"), 0)
	s.DeleteRange([]byte("b"), nil)
	s.Put([]byte("a"), []byte("a8"), 0)
}

func TestCompactionRemovesSupersededRevisions(t *testing.T) {
	tests := []struct {
		rev       int64
		wantStore []string
		wantKeys  int // keys left in the index
	}{
		// Nothing superseded yet at 2.
		{2, []string{"2.0", "3.0", "4.0", "5.0t", "6.0", "7.0t", "8.0"}, 3},
		// a@2 superseded by a@3.
		{3, []string{"3.0", "4.0", "5.0t", "6.0", "7.0t", "8.0"}, 3},
		// A tombstone exactly at the compact revision is kept.
		{5, []string{"4.0", "5.0t", "6.0", "7.0t", "8.0"}, 3},
		{6, []string{"4.0", "6.0", "7.0t", "8.0"}, 3},
		// b was deleted at 7: at 7 only its tombstone survives...
		{7, []string{"6.0", "7.0t", "8.0"}, 3},
		// ...and at the current revision it vanishes from the index.
		{8, []string{"6.0", "8.0"}, 2},
	}
	for _, tt := range tests {
		s, b, _ := newTestStore(t, testConfig)
		buildHistory(s)
		waitCompaction(t, mustCompact(t, s, tt.rev))
		if got := keyBucketRevs(t, b); !reflect.DeepEqual(got, tt.wantStore) {
			t.Errorf("compact %d: key bucket %v, want %v", tt.rev, got, tt.wantStore)
		}
		if got := s.index.Len(); got != tt.wantKeys {
			t.Errorf("compact %d: %d keys in the index, want %d", tt.rev, got, tt.wantKeys)
		}
		if got := metaRev(t, b, backend.MetaFinishedCompactRev); got != tt.rev {
			t.Errorf("compact %d: finished compact rev %d", tt.rev, got)
		}
		// Every revision from the compacted one on reads as before.
		for rev := tt.rev; rev <= 8; rev++ {
			res := mustRange(t, s, "", "\x00", RangeOptions{Rev: rev})
			ref := referenceAt(rev)
			if got := kvString(res.KVs); !reflect.DeepEqual(got, ref) {
				t.Errorf("compact %d, read at %d: %v, want %v", tt.rev, rev, got, ref)
			}
		}
	}
}

// referenceAt is the content of buildHistory's store at rev.
func referenceAt(rev int64) []string {
	states := map[int64][]string{
		1: {},
		2: {"a=a2@2/2/v1/l0"},
		3: {"a=a3@2/3/v2/l0"},
		4: {"a=a3@2/3/v2/l0", "b=b4@4/4/v1/l0"},
		5: {"b=b4@4/4/v1/l0"},
		6: {"b=b4@4/4/v1/l0", "c=c6@6/6/v1/l0"},
		7: {"c=c6@6/6/v1/l0"},
		8: {"a=a8@8/8/v1/l0", "c=c6@6/6/v1/l0"},
	}
	return states[rev]
}

func TestCompactBounds(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	buildHistory(s)
	if _, err := s.Compact(9); !errors.Is(err, errs.ErrFutureRev) {
		t.Fatalf("Compact above current: %v, want ErrFutureRev", err)
	}
	waitCompaction(t, mustCompact(t, s, 4))
	for _, rev := range []int64{4, 3, 0} {
		if _, err := s.Compact(rev); !errors.Is(err, errs.ErrCompacted) {
			t.Errorf("Compact(%d) after compacting 4: %v, want ErrCompacted", rev, err)
		}
	}
	if s.FirstRev() != 4 {
		t.Fatalf("FirstRev() = %d, want 4", s.FirstRev())
	}
	if _, err := s.Range(context.Background(), []byte("a"), nil, RangeOptions{Rev: 3}); !errors.Is(err, errs.ErrCompacted) {
		t.Fatalf("read below compaction: %v", err)
	}
	// Compacting again, at the current revision, works.
	waitCompaction(t, mustCompact(t, s, 8))
	if s.FirstRev() != 8 {
		t.Fatalf("FirstRev() = %d, want 8", s.FirstRev())
	}
}

func TestCompactionRecordsScheduledRevisionInBatch(t *testing.T) {
	s, b, _ := newTestStore(t, testConfig)
	buildHistory(s)
	// The scheduled revision is in the batch as soon as Compact returns.
	done := mustCompact(t, s, 6)
	if got := metaRev(t, b, backend.MetaScheduledCompactRev); got != 6 {
		t.Fatalf("scheduled compact rev = %d, want 6", got)
	}
	waitCompaction(t, done)
	if got := metaRev(t, b, backend.MetaFinishedCompactRev); got != 6 {
		t.Fatalf("finished compact rev = %d, want 6", got)
	}
}

func TestWritesDuringCompactionSurvive(t *testing.T) {
	s, b, _ := newTestStore(t, StoreConfig{CompactionBatchLimit: 1, CompactionSleepInterval: 1})
	for i := range 50 {
		s.Put([]byte("k"), []byte{byte(i)}, 0)
	}
	done := mustCompact(t, s, 51)
	for i := range 20 {
		s.Put([]byte("k"), []byte{byte(100 + i)}, 0)
	}
	waitCompaction(t, done)
	if got := len(keyBucketRevs(t, b)); got != 21 {
		t.Fatalf("%d revisions left, want 21 (the one at 51 and 20 newer)", got)
	}
	res := mustRange(t, s, "k", "", RangeOptions{Rev: 51})
	if res.KVs[0].Value[0] != 49 || res.KVs[0].Version != 50 {
		t.Fatalf("k at 51 = %v", kvString(res.KVs))
	}
}

func TestCloseInterruptsCompactionAndNewResumesIt(t *testing.T) {
	cfg := StoreConfig{CompactionBatchLimit: 1, CompactionSleepInterval: 1 << 40} // one round, then a long pause
	s, b, path := newTestStore(t, cfg)
	for i := range 10 {
		s.Put([]byte("k"), []byte{byte(i)}, 0)
	}
	done := mustCompact(t, s, 11)
	s2, b2 := reopen(t, s, b, path, testConfig)
	select {
	case <-done:
		t.Fatal("interrupted compaction reported done")
	default:
	}
	if s2.FirstRev() != 11 || s2.Rev() != 11 {
		t.Fatalf("after reopen FirstRev %d Rev %d, want 11, 11", s2.FirstRev(), s2.Rev())
	}
	// The resumed compaction finishes without anyone waiting on it; Compact
	// at the same revision is refused meanwhile.
	if _, err := s2.Compact(11); !errors.Is(err, errs.ErrCompacted) {
		t.Fatalf("Compact(11) after resume: %v", err)
	}
	s2.Put([]byte("x"), nil, 0)
	waitCompaction(t, mustCompact(t, s2, 12)) // queued behind the resumed one
	if got := keyBucketRevs(t, b2); !reflect.DeepEqual(got, []string{"11.0", "12.0"}) {
		t.Fatalf("key bucket after resumed compaction: %v", got)
	}
}

// TestCompactionPauseEndsOnQuit: a pause between rounds is one sleep
// interval, and quit ends it early.
func TestCompactionPauseEndsOnQuit(t *testing.T) {
	s, _, _ := newTestStore(t, StoreConfig{CompactionBatchLimit: 50, CompactionSleepInterval: time.Millisecond})
	quit := make(chan struct{})
	if !s.pauseCompaction(quit) {
		t.Fatal("pause reported an interruption")
	}
	close(quit)
	if s.pauseCompaction(quit) {
		t.Fatal("pause ignored quit")
	}
}
