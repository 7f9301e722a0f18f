package lease

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// newStoreEnv wires a lessor to a real mvcc store, as the member will.
func newStoreEnv(t *testing.T, be backend.Backend) (*testEnv, *mvcc.Store) {
	t.Helper()
	s := mvcc.New(nil, be, mvcc.StoreConfig{})
	t.Cleanup(func() { s.Close() })
	e := newEnv(t, Config{Backend: be, NewTxn: func() TxnDeleter { return s.Write() }})
	return e, s
}

func liveKeys(t *testing.T, kv mvcc.ReadView) []string {
	t.Helper()
	res, err := kv.Range(context.Background(), []byte{0}, []byte{0}, mvcc.RangeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range res.KVs {
		keys = append(keys, string(kv.Key))
	}
	return keys
}

func TestRevokeDeletesKeysInOneRevision(t *testing.T) {
	be, _ := backend.NewTmpBackend(t)
	e, s := newStoreEnv(t, be)
	e.mustGrant(t, 1, 10)
	for _, k := range []string{"c", "a", "b"} {
		s.Put([]byte(k), []byte("v"), 1)
		if err := e.le.Attach(1, []string{k}); err != nil {
			t.Fatal(err)
		}
	}
	s.Put([]byte("free"), []byte("v"), 0)
	before := s.Rev()

	if err := e.le.Revoke(1); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if got := s.Rev(); got != before+1 {
		t.Errorf("revision %d after revoke, want %d (one revision for all keys)", got, before+1)
	}
	if got := liveKeys(t, s); !slices.Equal(got, []string{"free"}) {
		t.Errorf("live keys = %q, want [free]", got)
	}
	if len(records(t, be)) != 0 {
		t.Error("lease record survived")
	}
	// Revoking a lease without keys changes no revision.
	e.mustGrant(t, 2, 10)
	if err := e.le.Revoke(2); err != nil || s.Rev() != before+1 {
		t.Errorf("empty revoke: %v, revision %d", err, s.Rev())
	}
}

func TestRecoverAttachments(t *testing.T) {
	be, _ := backend.NewTmpBackend(t)
	e, s := newStoreEnv(t, be)
	e.mustGrant(t, 1, 10)
	e.mustGrant(t, 2, 10)
	want1 := []string{}
	for i := range 3000 { // several batches of the index rebuild
		k := "k" + strconv.Itoa(i)
		s.Put([]byte(k), nil, 1)
		want1 = append(want1, k)
	}
	slices.Sort(want1)
	s.Put([]byte("x"), nil, 2)
	s.Put([]byte("y"), nil, 2)
	s.DeleteRange([]byte("y"), nil)
	s.Put([]byte("moved"), nil, 1)
	s.Put([]byte("moved"), nil, 2)   // the newest revision's lease counts
	s.Put([]byte("dropped"), nil, 2) // re-put without a lease
	s.Put([]byte("dropped"), nil, 0)
	s.Put([]byte("orphan"), nil, 77) // its lease is gone: skipped
	s.Put([]byte("free"), nil, 0)
	s.Close()

	// A fresh store and lessor on the same backend, as after a restart.
	s2 := mvcc.New(nil, be, mvcc.StoreConfig{})
	defer s2.Close()
	le, err := newLessor(Config{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	defer le.Stop()
	le.RecoverAttachments(s2.TakeRestoredLeases())
	if got := le.Lookup(1).Keys(); !slices.Equal(got, want1) {
		t.Errorf("lease 1 has %d keys, want %d", len(got), len(want1))
	}
	if got := le.Lookup(2).Keys(); !slices.Equal(got, []string{"moved", "x"}) {
		t.Errorf("lease 2 keys = %q, want [moved x]", got)
	}
	for _, k := range []string{"orphan", "free", "dropped", "y"} {
		if le.GetLease(k) != NoLease {
			t.Errorf("key %q attached to lease %d", k, le.GetLease(k))
		}
	}
	if again := s2.TakeRestoredLeases(); again != nil {
		t.Errorf("second TakeRestoredLeases returned %d keys", len(again))
	}
}
