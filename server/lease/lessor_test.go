package lease

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/lease/leasepb"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// The apply step looks leases up through this method set (apply.LeaseLookup).
var _ interface{ Exists(id int64) bool } = (*Lessor)(nil)

func TestMinTTL(t *testing.T) {
	tests := []struct {
		ticks     int
		heartbeat time.Duration
		want      int64
	}{
		{10, 100 * time.Millisecond, 2}, // etcd's defaults: 1.5 s
		{5, 100 * time.Millisecond, 1},  // 7 ticks: 0.7 s
		{3, 100 * time.Millisecond, 1},  // 4 ticks: 0.4 s
		{10, time.Second, 15},
		{20, 100 * time.Millisecond, 3},
	}
	for _, tt := range tests {
		if got := MinTTL(tt.ticks, tt.heartbeat); got != tt.want {
			t.Errorf("MinTTL(%d, %v) = %d, want %d", tt.ticks, tt.heartbeat, got, tt.want)
		}
	}
}

func TestGrant(t *testing.T) {
	tests := []struct {
		name    string
		id      LeaseID
		ttl     int64
		wantTTL int64
		wantErr error
	}{
		{"ttl kept", 1, 10, 10, nil},
		{"ttl at minimum", 1, 2, 2, nil},
		{"ttl 1 raised", 1, 1, 2, nil},
		{"ttl 0 raised", 1, 0, 2, nil},
		{"negative ttl raised", 1, -7, 2, nil},
		{"max ttl", 1, MaxLeaseTTL, MaxLeaseTTL, nil},
		{"ttl too large", 1, MaxLeaseTTL + 1, 0, errs.ErrLeaseTTLTooLarge},
		{"no id", NoLease, 10, 0, errs.ErrLeaseNotFound},
		{"negative id", -5, 10, 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			l, err := e.le.Grant(tt.id, tt.ttl)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			recs := records(t, e.be)
			if tt.wantErr != nil {
				if l != nil || len(recs) != 0 || e.le.Exists(int64(tt.id)) {
					t.Fatalf("failed grant left lease %v, records %v", l, recs)
				}
				return
			}
			if l.ID() != tt.id || l.TTL() != tt.wantTTL || l.RemainingTTL() != tt.wantTTL {
				t.Errorf("lease %d ttl %d remaining %d, want %d ttl %d", l.ID(), l.TTL(), l.RemainingTTL(), tt.id, tt.wantTTL)
			}
			if want := (leasepb.Lease{ID: int64(tt.id), TTL: tt.wantTTL}); recs[tt.id] != want || len(recs) != 1 {
				t.Errorf("records = %v, want only %+v", recs, want)
			}
			if e.le.Lookup(tt.id) != l || !e.le.Exists(int64(tt.id)) {
				t.Error("granted lease not found")
			}
			if l.Remaining() != time.Duration(1<<63-1) || !l.Expiry().IsZero() {
				t.Errorf("a follower's lease expires: remaining %v", l.Remaining())
			}
		})
	}
}

func TestGrantDuplicate(t *testing.T) {
	e := newEnv(t, Config{})
	first := e.mustGrant(t, 7, 10)
	if _, err := e.le.Grant(7, 20); !errors.Is(err, errs.ErrLeaseExists) {
		t.Fatalf("second Grant err = %v, want ErrLeaseExists", err)
	}
	if e.le.Lookup(7) != first || records(t, e.be)[7].TTL != 10 {
		t.Error("duplicate grant changed the lease")
	}
}

func TestMinLeaseTTLConfig(t *testing.T) {
	e := newEnv(t, Config{MinLeaseTTL: 5})
	if got := e.mustGrant(t, 1, 3).TTL(); got != 5 {
		t.Errorf("TTL = %d, want the configured minimum 5", got)
	}
}

func TestLeasesSorted(t *testing.T) {
	e := newEnv(t, Config{})
	for _, id := range []LeaseID{30, -2, 10, 20} {
		e.mustGrant(t, id, 10)
	}
	if got, want := ids(e.le.Leases()), []LeaseID{-2, 10, 20, 30}; !slices.Equal(got, want) {
		t.Errorf("Leases = %v, want %v", got, want)
	}
	if e.le.Lookup(99) != nil || e.le.Exists(99) || e.le.Exists(0) {
		t.Error("unknown lease found")
	}
}

func TestAttachDetach(t *testing.T) {
	type op struct {
		detach  bool
		id      LeaseID
		keys    []string
		wantErr error
	}
	tests := []struct {
		name     string
		ops      []op
		wantKeys map[LeaseID][]string
		wantOf   map[string]LeaseID
	}{
		{"attach", []op{{false, 1, []string{"b", "a"}, nil}},
			map[LeaseID][]string{1: {"a", "b"}, 2: {}}, map[string]LeaseID{"a": 1, "b": 1, "c": NoLease}},
		{"attach to unknown lease", []op{{false, 9, []string{"a"}, errs.ErrLeaseNotFound}},
			map[LeaseID][]string{1: {}, 2: {}}, map[string]LeaseID{"a": NoLease}},
		{"key moves to another lease", []op{{false, 1, []string{"a", "b"}, nil}, {false, 2, []string{"a"}, nil}},
			map[LeaseID][]string{1: {"b"}, 2: {"a"}}, map[string]LeaseID{"a": 2, "b": 1}},
		{"detach", []op{{false, 1, []string{"a", "b"}, nil}, {true, 1, []string{"a"}, nil}},
			map[LeaseID][]string{1: {"b"}, 2: {}}, map[string]LeaseID{"a": NoLease, "b": 1}},
		{"detach from the wrong lease keeps the key", []op{{false, 1, []string{"a"}, nil}, {true, 2, []string{"a"}, nil}},
			map[LeaseID][]string{1: {"a"}, 2: {}}, map[string]LeaseID{"a": 1}},
		{"detach from unknown lease", []op{{true, 9, []string{"a"}, errs.ErrLeaseNotFound}},
			map[LeaseID][]string{1: {}, 2: {}}, map[string]LeaseID{"a": NoLease}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			e.mustGrant(t, 1, 10)
			e.mustGrant(t, 2, 10)
			for _, o := range tt.ops {
				f := e.le.Attach
				if o.detach {
					f = e.le.Detach
				}
				if err := f(o.id, o.keys); !errors.Is(err, o.wantErr) {
					t.Fatalf("op %+v: err = %v, want %v", o, err, o.wantErr)
				}
			}
			for id, want := range tt.wantKeys {
				if got := e.le.Lookup(id).Keys(); !slices.Equal(got, want) {
					t.Errorf("lease %d keys = %q, want %q", id, got, want)
				}
			}
			for key, want := range tt.wantOf {
				if got := e.le.GetLease(key); got != want {
					t.Errorf("GetLease(%q) = %d, want %d", key, got, want)
				}
			}
		})
	}
}

func TestRevoke(t *testing.T) {
	e := newEnv(t, Config{})
	l := e.mustGrant(t, 1, 10)
	e.mustGrant(t, 2, 10)
	if err := e.le.Attach(1, []string{"zeta", "alpha", "mid"}); err != nil {
		t.Fatal(err)
	}
	if err := e.le.Attach(2, []string{"other"}); err != nil {
		t.Fatal(err)
	}
	if err := e.le.Revoke(1); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if e.dels.txns != 1 || e.dels.ended != 1 {
		t.Fatalf("txns opened %d, ended %d; want one", e.dels.txns, e.dels.ended)
	}
	if want := []string{"alpha", "mid", "zeta"}; !slices.Equal(e.dels.deletes[0], want) {
		t.Errorf("deleted %q, want %q in key order", e.dels.deletes[0], want)
	}
	select {
	case <-l.Revoked():
	default:
		t.Error("Revoked not closed")
	}
	if e.le.Exists(1) || e.le.GetLease("alpha") != NoLease || e.le.GetLease("other") != 2 {
		t.Error("revoked lease or its attachments left behind")
	}
	if recs := records(t, e.be); len(recs) != 1 || recs[2].ID != 2 {
		t.Errorf("records after revoke = %v, want only lease 2", recs)
	}
	if err := e.le.Revoke(1); !errors.Is(err, errs.ErrLeaseNotFound) {
		t.Errorf("second Revoke err = %v, want ErrLeaseNotFound", err)
	}
	if e.dels.txns != 1 {
		t.Errorf("revoking an unknown lease opened a transaction")
	}
}

func TestRevokeWithoutDeleter(t *testing.T) {
	be, _ := backend.NewTmpBackend(t)
	le, err := newLessor(Config{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	defer le.Stop()
	if _, err := le.Grant(1, 10); err != nil {
		t.Fatal(err)
	}
	if err := le.Revoke(1); err != nil || le.Exists(1) || len(records(t, be)) != 0 {
		t.Fatalf("Revoke = %v; lease left: %v, records %v", err, le.Exists(1), records(t, be))
	}
}

func TestCheckpointApplied(t *testing.T) {
	e := newEnv(t, Config{})
	l := e.mustGrant(t, 1, 100)
	tests := []struct {
		id        LeaseID
		remaining int64
		want      int64
	}{
		{1, 40, 40},
		{1, 0, 0}, // a renewal clears it
		{1, 25, 25},
		{9, 30, 25}, // unknown lease: ignored, no error
	}
	for _, tt := range tests {
		if err := e.le.Checkpoint(tt.id, tt.remaining); err != nil {
			t.Fatalf("Checkpoint(%d, %d): %v", tt.id, tt.remaining, err)
		}
		if l.CheckpointedTTL() != tt.want || records(t, e.be)[1].RemainingTTL != tt.want {
			t.Errorf("after Checkpoint(%d, %d): remaining %d, record %+v; want %d",
				tt.id, tt.remaining, l.CheckpointedTTL(), records(t, e.be)[1], tt.want)
		}
	}
	if l.RemainingTTL() != 25 {
		t.Errorf("follower RemainingTTL = %d, want the checkpointed 25", l.RemainingTTL())
	}
	if len(records(t, e.be)) != 1 {
		t.Error("checkpoint of an unknown lease wrote a record")
	}
}

func TestPersistence(t *testing.T) {
	be, path := backend.NewTmpBackend(t)
	e := newEnv(t, Config{Backend: be})
	e.mustGrant(t, 3, 60)
	e.mustGrant(t, 1, 2)
	e.mustGrant(t, 2, 30)
	e.mustGrant(t, 4, 30)
	if err := e.le.Checkpoint(2, 12); err != nil {
		t.Fatal(err)
	}
	if err := e.le.Revoke(4); err != nil {
		t.Fatal(err)
	}
	e.le.Stop()
	be.Commit()
	if err := be.Close(); err != nil {
		t.Fatal(err)
	}
	nb, err := backend.Open(backend.Config{Path: path, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()

	// A larger minimum raises the recovered lease 1 (as in etcd).
	le, err := NewLessor(Config{Backend: nb, MinLeaseTTL: 3, Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer le.Stop()
	type got struct {
		id             LeaseID
		ttl, remaining int64
	}
	var gots []got
	for _, l := range le.Leases() {
		gots = append(gots, got{l.ID(), l.TTL(), l.CheckpointedTTL()})
	}
	want := []got{{1, 3, 0}, {2, 30, 12}, {3, 60, 0}}
	if !slices.Equal(gots, want) {
		t.Errorf("recovered %v, want %v", gots, want)
	}
	if le.IsPrimary() {
		t.Error("a recovered lessor is primary")
	}
}

func TestNewLessorRejectsBadRecord(t *testing.T) {
	be, _ := backend.NewTmpBackend(t)
	tx := be.BatchTx()
	tx.Lock()
	tx.UnsafePut(backend.BucketLease, leaseKey(1), []byte{0x08})
	tx.Unlock()
	if _, err := NewLessor(Config{Backend: be}); err == nil {
		t.Fatal("NewLessor accepted a truncated record")
	}
	if _, err := NewLessor(Config{}); err == nil {
		t.Fatal("NewLessor accepted a missing backend")
	}
}

func TestKeyPutAndDeleted(t *testing.T) {
	e := newEnv(t, Config{})
	e.mustGrant(t, 1, 10)
	e.mustGrant(t, 2, 10)
	steps := []struct {
		put     bool
		id      LeaseID
		wantErr error
		want    LeaseID
		keys1   []string
	}{
		{true, 1, nil, 1, []string{"k"}},
		{true, 2, nil, 2, []string{}},                   // moves
		{true, 9, errs.ErrLeaseNotFound, 2, []string{}}, // unknown lease: unchanged
		{true, 1, nil, 1, []string{"k"}},                // back
		{true, NoLease, nil, NoLease, []string{}},       // put without lease detaches
		{true, 1, nil, 1, []string{"k"}},
		{false, NoLease, nil, NoLease, []string{}}, // deleted
		{false, NoLease, nil, NoLease, []string{}}, // deleting again is harmless
	}
	for i, s := range steps {
		var err error
		if s.put {
			err = e.le.KeyPut("k", s.id)
		} else {
			e.le.KeyDeleted("k")
		}
		if !errors.Is(err, s.wantErr) {
			t.Fatalf("step %d: err = %v, want %v", i, err, s.wantErr)
		}
		if got := e.le.GetLease("k"); got != s.want {
			t.Fatalf("step %d: GetLease = %d, want %d", i, got, s.want)
		}
		if got := e.le.Lookup(1).Keys(); !slices.Equal(got, s.keys1) {
			t.Fatalf("step %d: lease 1 keys = %q, want %q", i, got, s.keys1)
		}
	}
}
