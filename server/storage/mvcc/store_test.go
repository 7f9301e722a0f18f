package mvcc

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/cairnkv/cairn/server/errs"
)

func TestEmptyStoreStartsAtRevisionOne(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	if got := s.Rev(); got != 1 {
		t.Fatalf("Rev() = %d, want 1", got)
	}
	if got := s.FirstRev(); got != 0 {
		t.Fatalf("FirstRev() = %d, want 0", got)
	}
	if rev := s.Put([]byte("a"), []byte("1"), 0); rev != 2 {
		t.Fatalf("first Put revision = %d, want 2", rev)
	}
}

func TestTxnSharesMainRevisionWithIncreasingSubs(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	txn := s.Write()
	revs := []int64{
		txn.Put([]byte("a"), []byte("1"), 0),
		txn.Put([]byte("b"), []byte("2"), 7),
	}
	n, delRev := txn.DeleteRange([]byte("a"), nil)
	revs = append(revs, delRev, txn.Put([]byte("a"), []byte("3"), 0))
	// Inside the txn its own changes are visible, at the txn's revision.
	res := mustRange(t, txn, "a", "\x00", RangeOptions{})
	want := []string{"a=3@2/2/v1/l0", "b=2@2/2/v1/l7"}
	if got := kvString(res.KVs); !reflect.DeepEqual(got, want) || res.Rev != 2 {
		t.Fatalf("in-txn range = %v rev %d, want %v rev 2", got, res.Rev, want)
	}
	changes := txn.Changes()
	txn.End()

	if n != 1 || !reflect.DeepEqual(revs, []int64{2, 2, 2, 2}) {
		t.Fatalf("deleted %d, revisions %v; want 1 and all 2", n, revs)
	}
	if s.Rev() != 2 {
		t.Fatalf("Rev() = %d after one txn, want 2", s.Rev())
	}
	if len(changes) != 4 || changes[2].ModRevision != 2 || changes[2].Version != 0 || string(changes[2].Key) != "a" {
		t.Fatalf("changes = %v, want put, put, delete(a@2), put", changes)
	}
	// The four changes are stored at 2.0 .. 2.3; the tombstone at 2.2.
	tx := s.b.ReadTx()
	tx.RLock()
	keys, _ := tx.UnsafeRange([]byte("key"), RevToBytes(Revision{Main: 2}), RevToBytes(Revision{Main: 3}), 0)
	tx.RUnlock()
	wantKeys := [][]byte{
		RevToBytes(Revision{2, 0}), RevToBytes(Revision{2, 1}),
		TombstoneRevToBytes(Revision{2, 2}), RevToBytes(Revision{2, 3}),
	}
	if !reflect.DeepEqual(keys, wantKeys) {
		t.Fatalf("key bucket = %x, want %x", keys, wantKeys)
	}
}

func TestChangelessTxnKeepsRevision(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	s.Put([]byte("a"), []byte("1"), 0)

	n, rev := s.DeleteRange([]byte("nothing"), nil)
	if n != 0 || rev != 2 || s.Rev() != 2 {
		t.Fatalf("delete of nothing: n=%d rev=%d Rev()=%d, want 0, 2, 2", n, rev, s.Rev())
	}
	txn := s.Write()
	txn.Range(context.Background(), []byte("a"), nil, RangeOptions{})
	txn.End()
	if s.Rev() != 2 {
		t.Fatalf("read-only write txn bumped the revision to %d", s.Rev())
	}
	// A delete of nothing after a put in the same txn reports the new revision.
	txn = s.Write()
	txn.Put([]byte("b"), nil, 0)
	if n, rev := txn.DeleteRange([]byte("zzz"), nil); n != 0 || rev != 3 {
		t.Fatalf("delete of nothing after a put: n=%d rev=%d, want 0, 3", n, rev)
	}
	txn.End()
}

func TestGenerationsAcrossDeleteAndRecreate(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	s.Put([]byte("k"), []byte("v1"), 0) // 2
	s.Put([]byte("k"), []byte("v2"), 0) // 3
	s.DeleteRange([]byte("k"), nil)     // 4
	s.Put([]byte("k"), []byte("v3"), 5) // 5
	s.Put([]byte("k"), []byte("v4"), 0) // 6

	tests := []struct {
		rev  int64
		want []string
	}{
		{1, []string{}},
		{2, []string{"k=v1@2/2/v1/l0"}},
		{3, []string{"k=v2@2/3/v2/l0"}},
		{4, []string{}},
		{5, []string{"k=v3@5/5/v1/l5"}},
		{6, []string{"k=v4@5/6/v2/l0"}},
		{0, []string{"k=v4@5/6/v2/l0"}},
	}
	for _, tt := range tests {
		res := mustRange(t, s, "k", "", RangeOptions{Rev: tt.rev})
		if got := kvString(res.KVs); !reflect.DeepEqual(got, tt.want) || res.Rev != 6 {
			t.Errorf("at rev %d: %v (header %d), want %v (header 6)", tt.rev, got, res.Rev, tt.want)
		}
	}
}

func TestRangeEndConventions(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	for _, k := range []string{"", "a", "b", "b/1", "c"} {
		if k != "" {
			s.Put([]byte(k), []byte(k), 0)
		}
	}
	tests := []struct {
		key, end string
		want     []string
	}{
		{"b", "", []string{"b"}},
		{"b", "c", []string{"b", "b/1"}},
		{"b", "\x00", []string{"b", "b/1", "c"}},
		{"", "\x00", []string{"a", "b", "b/1", "c"}},
		{"c", "a", []string{}},
		{"x", "", []string{}},
	}
	for _, tt := range tests {
		res := mustRange(t, s, tt.key, tt.end, RangeOptions{})
		got := []string{}
		for _, kv := range res.KVs {
			got = append(got, string(kv.Key))
		}
		if !reflect.DeepEqual(got, tt.want) || res.Count != len(tt.want) {
			t.Errorf("Range(%q,%q) = %v count %d, want %v", tt.key, tt.end, got, res.Count, tt.want)
		}
	}
	// A non-nil empty end is unbounded too.
	res, _ := s.Range(context.Background(), []byte("b"), []byte{}, RangeOptions{})
	if len(res.KVs) != 3 {
		t.Errorf("Range(b, []byte{}) = %d keys, want 3", len(res.KVs))
	}
}

func TestRangeLimitAndCount(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	for i := range 10 {
		s.Put([]byte(fmt.Sprintf("k%d", i)), []byte("v"), 0)
	}
	res := mustRange(t, s, "k", "l", RangeOptions{Limit: 3})
	if len(res.KVs) != 3 || res.Count != 10 || string(res.KVs[2].Key) != "k2" {
		t.Fatalf("limit 3: %d KVs, count %d", len(res.KVs), res.Count)
	}
	res = mustRange(t, s, "k", "l", RangeOptions{Count: true, Rev: 5})
	if len(res.KVs) != 0 || res.Count != 4 {
		t.Fatalf("count at rev 5: %d KVs, count %d; want 0, 4", len(res.KVs), res.Count)
	}
}

func TestRangeRevisionErrors(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	for i := range 5 {
		s.Put([]byte("k"), []byte{byte(i)}, 0)
	}
	waitCompaction(t, mustCompact(t, s, 4))
	tests := []struct {
		rev  int64
		want error
	}{
		{3, errs.ErrCompacted},
		{4, nil}, // the compacted revision itself stays readable
		{6, nil},
		{7, errs.ErrFutureRev},
		{0, nil},
		{-1, nil},
	}
	for _, tt := range tests {
		_, err := s.Range(context.Background(), []byte("k"), nil, RangeOptions{Rev: tt.rev})
		if !errors.Is(err, tt.want) {
			t.Errorf("Range at %d: err %v, want %v", tt.rev, err, tt.want)
		}
	}
}

func TestRangeHonoursCancelledContext(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	s.Put([]byte("a"), []byte("1"), 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Range(ctx, []byte("a"), []byte("\x00"), RangeOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Range with cancelled ctx: %v, want context.Canceled", err)
	}
}

func TestReadTxnIsASnapshot(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	s.Put([]byte("a"), []byte("1"), 0)
	r := s.Read()
	defer r.End()
	done := make(chan struct{})
	go func() { // the writer must not wait for the open read txn
		s.Put([]byte("a"), []byte("2"), 0)
		close(done)
	}()
	<-done
	res := mustRange(t, r, "a", "", RangeOptions{})
	if r.Rev() != 2 || res.Rev != 2 || string(res.KVs[0].Value) != "1" {
		t.Fatalf("read txn sees %v at %d, want a=1 at 2", kvString(res.KVs), res.Rev)
	}
	if _, err := r.Range(context.Background(), []byte("a"), nil, RangeOptions{Rev: 3}); !errors.Is(err, errs.ErrFutureRev) {
		t.Fatalf("read txn at a newer revision: %v, want ErrFutureRev", err)
	}
}

func mustCompact(tb testing.TB, s *Store, rev int64) <-chan struct{} {
	tb.Helper()
	done, err := s.Compact(rev)
	if err != nil {
		tb.Fatalf("Compact(%d): %v", rev, err)
	}
	return done
}
