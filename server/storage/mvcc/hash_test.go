package mvcc

import (
	"errors"
	"hash/crc32"
	"testing"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// keyBucketEntry returns the stored key and value at rev.
func keyBucketEntry(tb testing.TB, b backend.Backend, rev Revision, tombstone bool) (k, v []byte) {
	tb.Helper()
	k = RevToBytes(rev)
	if tombstone {
		k = TombstoneRevToBytes(rev)
	}
	tx := b.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	_, vals := tx.UnsafeRange(backend.BucketKey, k, nil, 0)
	if len(vals) != 1 {
		tb.Fatalf("no entry at %v", rev)
	}
	return k, append([]byte(nil), vals[0]...)
}

// expectedHash is etcd's HashKV computed by hand over the given entries.
func expectedHash(tb testing.TB, b backend.Backend, entries ...struct {
	rev  Revision
	tomb bool
}) uint32 {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	h.Write([]byte("key"))
	for _, e := range entries {
		k, v := keyBucketEntry(tb, b, e.rev, e.tomb)
		h.Write(k)
		h.Write(v)
	}
	return h.Sum32()
}

type entry = struct {
	rev  Revision
	tomb bool
}

func TestHashByRevSelection(t *testing.T) {
	s, b, _ := newTestStore(t, testConfig)
	buildHistory(s)

	// Never compacted: every revision up to rev, tombstones included.
	got, cur, err := s.HashByRev(7)
	want := expectedHash(t, b, entry{Revision{2, 0}, false}, entry{Revision{3, 0}, false},
		entry{Revision{4, 0}, false}, entry{Revision{5, 0}, true}, entry{Revision{6, 0}, false}, entry{Revision{7, 0}, true})
	if err != nil || cur != 8 || got != (KeyValueHash{Hash: want, CompactRevision: -1, Revision: 7}) {
		t.Fatalf("HashByRev(7) = %+v, %d, %v; want hash %d, compact -1, rev 7, current 8", got, cur, err, want)
	}

	// Compacted at 5: b@4 is not visible at 8 (b was deleted at 7), so it is
	// not kept; a's tombstone at exactly 5 is skipped.
	waitCompaction(t, mustCompact(t, s, 5))
	got, _, err = s.HashByRev(0)
	want = expectedHash(t, b, entry{Revision{6, 0}, false}, entry{Revision{7, 0}, true}, entry{Revision{8, 0}, false})
	if err != nil || got != (KeyValueHash{Hash: want, CompactRevision: 5, Revision: 8}) {
		t.Fatalf("HashByRev(0) after compact 5 = %+v, %v; want hash %d", got, err, want)
	}
	// At 6, b@4 is still the visible b, so it is kept and hashed.
	got, _, _ = s.HashByRev(6)
	want = expectedHash(t, b, entry{Revision{4, 0}, false}, entry{Revision{6, 0}, false})
	if got.Hash != want {
		t.Fatalf("HashByRev(6) = %d, want %d", got.Hash, want)
	}
}

func TestHashByRevErrors(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	buildHistory(s)
	waitCompaction(t, mustCompact(t, s, 5))
	tests := []struct {
		rev     int64
		wantErr error
		wantCur int64
	}{
		{4, errs.ErrCompacted, 0},
		{5, nil, 8}, // the compacted revision itself can be hashed
		{9, errs.ErrFutureRev, 8},
	}
	for _, tt := range tests {
		_, cur, err := s.HashByRev(tt.rev)
		if !errors.Is(err, tt.wantErr) || cur != tt.wantCur {
			t.Errorf("HashByRev(%d): current %d, err %v; want %d, %v", tt.rev, cur, err, tt.wantCur, tt.wantErr)
		}
	}
}

func TestHashIsIndependentOfCompactionProgress(t *testing.T) {
	// A store whose compaction stops after its first round and one whose
	// compaction completed must agree: members compact at their own pace.
	// (hashKV: HashByRev would answer 6 from the full store's stored
	// compaction hash, relative to the compaction before.)
	stalled := StoreConfig{CompactionBatchLimit: 1, CompactionSleepInterval: 1 << 40}
	partial, _, _ := newTestStore(t, stalled)
	full, _, _ := newTestStore(t, testConfig)
	for _, s := range []*Store{partial, full} {
		buildHistory(s)
		s.Put([]byte("a"), []byte("a9"), 0)
	}
	mustCompact(t, partial, 6)
	waitCompaction(t, mustCompact(t, full, 6))
	for rev := int64(6); rev <= 9; rev++ {
		hp, _, err1 := partial.hashKV(rev)
		hf, _, err2 := full.hashKV(rev)
		if err1 != nil || err2 != nil || hp != hf {
			t.Errorf("rev %d: partial %+v (%v), full %+v (%v)", rev, hp, err1, hf, err2)
		}
	}
}
