package lease

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/server/errs"
)

func TestExpiryOnlyOnPrimary(t *testing.T) {
	e := newEnv(t, Config{})
	e.mustGrant(t, 1, 5)
	e.clock.Advance(time.Hour)
	if got := e.expired(); got != nil {
		t.Fatalf("a follower reported expired leases %v", got)
	}
	e.le.Promote(0)
	if got := e.expired(); got != nil {
		t.Fatalf("expired right after promotion: %v", got)
	}
	e.clock.Advance(5 * time.Second)
	if got := e.expired(); !slices.Equal(got, []LeaseID{1}) {
		t.Fatalf("expired = %v, want [1]", got)
	}
	e.le.Demote()
	e.clock.Advance(time.Hour)
	if got := e.expired(); got != nil {
		t.Fatalf("a demoted lessor reported %v", got)
	}
}

func TestExpiryOrderBatchesAndRetry(t *testing.T) {
	e := newEnv(t, Config{ExpiredLeasesRetryInterval: 3 * time.Second})
	e.le.revokeLimit = 2
	e.le.Promote(0)
	// Granted on the primary: each counts down from its grant.
	for _, g := range []struct {
		id  LeaseID
		ttl int64
	}{{10, 7}, {11, 5}, {12, 6}, {13, 20}, {14, 5}} {
		e.mustGrant(t, g.id, g.ttl)
	}
	steps := []struct {
		advance time.Duration
		revoke  []LeaseID // applied before the tick
		want    []LeaseID
	}{
		{4 * time.Second, nil, nil},
		{3 * time.Second, nil, []LeaseID{11, 14}}, // t=7: five leases due, two per batch, earliest first
		{0, nil, []LeaseID{12, 10}},
		{0, nil, nil},
		{2 * time.Second, []LeaseID{11, 12, 10}, nil}, // t=9: not yet time to retry
		{time.Second, nil, []LeaseID{14}},             // t=10: 14 not revoked after 3 s: again
		{0, nil, nil},
		{3 * time.Second, nil, []LeaseID{14}}, // t=13: and again
		{0, []LeaseID{14}, nil},
		{17 * time.Second, nil, []LeaseID{13}}, // t=30
		{0, nil, nil},
	}
	for i, s := range steps {
		e.clock.Advance(s.advance)
		for _, id := range s.revoke {
			if err := e.le.Revoke(id); err != nil {
				t.Fatalf("step %d: Revoke(%d): %v", i, id, err)
			}
		}
		if got := e.expired(); !slices.Equal(got, s.want) {
			t.Fatalf("step %d: expired = %v, want %v", i, got, s.want)
		}
	}
}

func TestExpiredBatchDroppedWhenUnread(t *testing.T) {
	e := newEnv(t, Config{ExpiredLeasesRetryInterval: time.Second})
	e.le.Promote(0)
	e.mustGrant(t, 1, 2)
	e.clock.Advance(2 * time.Second)
	for range expiredBacklog + 1 {
		e.le.tick()
		e.clock.Advance(time.Second)
	}
	if n := len(e.le.ExpiredLeasesC()); n != expiredBacklog {
		t.Fatalf("%d batches buffered, want %d (the rest dropped, not blocking)", n, expiredBacklog)
	}
}

func TestRenew(t *testing.T) {
	e := newEnv(t, Config{})
	l := e.mustGrant(t, 1, 10)
	if _, err := e.le.Renew(context.Background(), 1); !errors.Is(err, ErrNotPrimary) {
		t.Fatalf("Renew on a follower: %v, want ErrNotPrimary", err)
	}
	e.le.Promote(0)
	if _, err := e.le.Renew(context.Background(), 2); !errors.Is(err, errs.ErrLeaseNotFound) {
		t.Fatalf("Renew of an unknown lease: %v, want ErrLeaseNotFound", err)
	}
	e.clock.Advance(8 * time.Second)
	if got := l.RemainingTTL(); got != 2 {
		t.Fatalf("RemainingTTL before renew = %d, want 2", got)
	}
	ttl, err := e.le.Renew(context.Background(), 1)
	if err != nil || ttl != 10 {
		t.Fatalf("Renew = %d, %v; want 10", ttl, err)
	}
	if l.Remaining() != 10*time.Second || l.RemainingTTL() != 10 {
		t.Errorf("after renew: remaining %v (%d s), want 10 s", l.Remaining(), l.RemainingTTL())
	}
	e.clock.Advance(9 * time.Second)
	if got := e.expired(); got != nil {
		t.Errorf("renewed lease expired early: %v", got)
	}
	e.clock.Advance(time.Second)
	if got := e.expired(); !slices.Equal(got, []LeaseID{1}) {
		t.Errorf("expired = %v, want [1]", got)
	}
}

// TestRenewExpired: a keepalive for an expired, not yet revoked lease waits
// for its fate. Whether Renew is already waiting when the event happens or
// sees it on entry, the outcome is the same.
func TestRenewExpired(t *testing.T) {
	tests := []struct {
		name  string
		event func(e *testEnv, cancel context.CancelFunc)
		want  error
	}{
		{"revoked", func(e *testEnv, _ context.CancelFunc) { _ = e.le.Revoke(1) }, errs.ErrLeaseNotFound},
		{"demoted", func(e *testEnv, _ context.CancelFunc) { e.le.Demote() }, ErrNotPrimary},
		{"stopped", func(e *testEnv, _ context.CancelFunc) { e.le.Stop() }, ErrNotPrimary},
		{"context ended", func(_ *testEnv, cancel context.CancelFunc) { cancel() }, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			e.le.Promote(0)
			e.mustGrant(t, 1, 5)
			e.clock.Advance(6 * time.Second)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := e.le.Renew(ctx, 1)
				errc <- err
			}()
			tt.event(e, cancel)
			if err := <-errc; !errors.Is(err, tt.want) {
				t.Fatalf("Renew = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestPromoteExtends(t *testing.T) {
	e := newEnv(t, Config{})
	l1 := e.mustGrant(t, 1, 10)
	l2 := e.mustGrant(t, 2, 60)
	if err := e.le.Checkpoint(2, 20); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour) // time on a follower does not count
	e.le.Promote(time.Second)
	if !e.le.IsPrimary() {
		t.Fatal("not primary after Promote")
	}
	if l1.Remaining() != 11*time.Second {
		t.Errorf("lease 1 remaining %v, want TTL 10 s + 1 s", l1.Remaining())
	}
	if l2.Remaining() != 21*time.Second {
		t.Errorf("lease 2 remaining %v, want checkpointed 20 s + 1 s", l2.Remaining())
	}
	e.clock.Advance(11 * time.Second)
	if got := e.expired(); !slices.Equal(got, []LeaseID{1}) {
		t.Errorf("expired = %v, want [1]", got)
	}
	e.le.Demote()
	if e.le.IsPrimary() || l2.Remaining() != time.Duration(1<<63-1) || l2.RemainingTTL() != 20 {
		t.Errorf("after Demote: primary %v, remaining %v, ttl %d", e.le.IsPrimary(), l2.Remaining(), l2.RemainingTTL())
	}
}

func TestPromoteSpreadsBunchedExpiries(t *testing.T) {
	e := newEnv(t, Config{})
	const n = 2000
	for i := range n {
		e.mustGrant(t, LeaseID(i+1), 10)
	}
	e.le.Promote(0)
	start := e.clock.Now().Add(10 * time.Second)
	perSecond := map[int]int{}
	for _, l := range e.le.Leases() {
		off := l.Expiry().Sub(start)
		if off < 0 {
			t.Fatalf("lease %d expires before its TTL", l.ID())
		}
		perSecond[int(off/time.Second)]++
	}
	for s, c := range perSecond {
		if c > 3*leaseRevokeRate/4 {
			t.Errorf("%d leases expire in second %d, want at most %d", c, s, 3*leaseRevokeRate/4)
		}
	}
	if len(perSecond) != 3 {
		t.Errorf("expiries spread over %d seconds, want 3 (%v)", len(perSecond), perSecond)
	}
}

// checkpointRecorder is a Checkpointer that records proposals and applies
// them to the lessor, as raft would.
type checkpointRecorder struct {
	mu    sync.Mutex
	le    *Lessor
	calls [][]*pb.LeaseCheckpoint
}

func (r *checkpointRecorder) propose(_ context.Context, cps []*pb.LeaseCheckpoint) error {
	r.mu.Lock()
	r.calls = append(r.calls, cps)
	r.mu.Unlock()
	for _, cp := range cps {
		if err := r.le.Checkpoint(LeaseID(cp.ID), cp.Remaining_TTL); err != nil {
			return err
		}
	}
	return nil
}

func (r *checkpointRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.calls {
		s := ""
		for _, cp := range c {
			s += " " + itoa(cp.ID) + ":" + itoa(cp.Remaining_TTL)
		}
		out = append(out, s)
	}
	r.calls = nil
	return out
}

func itoa(v int64) string {
	if v < 0 {
		return "-" + itoa(-v)
	}
	if v < 10 {
		return string(rune('0' + v))
	}
	return itoa(v/10) + string(rune('0'+v%10))
}

func TestCheckpoints(t *testing.T) {
	rec := &checkpointRecorder{}
	e := newEnv(t, Config{Checkpointer: rec.propose, CheckpointInterval: 10 * time.Second})
	rec.le = e.le
	e.mustGrant(t, 1, 60)
	e.mustGrant(t, 2, 5) // shorter than an interval: never checkpointed
	e.mustGrant(t, 3, 30)
	e.le.Promote(0)

	e.clock.Advance(9 * time.Second)
	e.le.tick()
	if got := rec.take(); got != nil {
		t.Fatalf("checkpoints before the interval: %v", got)
	}
	e.clock.Advance(time.Second)
	e.le.tick()
	if got, want := rec.take(), []string{" 1:50 3:20"}; !slices.Equal(got, want) {
		t.Fatalf("checkpoints = %q, want %q", got, want)
	}
	if recs := records(t, e.be); recs[1].RemainingTTL != 50 || recs[3].RemainingTTL != 20 {
		t.Errorf("records = %v", recs)
	}

	// A renewal clears the checkpoint through raft before refreshing.
	if _, err := e.le.Renew(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.take(), []string{" 1:0"}; !slices.Equal(got, want) {
		t.Fatalf("renew proposed %q, want %q", got, want)
	}
	if e.le.Lookup(1).CheckpointedTTL() != 0 {
		t.Error("renew left the checkpoint")
	}

	// Applied checkpoints reschedule: lease 3 (20 s left) is checkpointed again.
	e.clock.Advance(10 * time.Second)
	e.le.tick()
	if got, want := rec.take(), []string{" 1:50 3:10"}; !slices.Equal(got, want) {
		t.Fatalf("second round = %q, want %q", got, want)
	}

	// A new leader counts down from the checkpoint, not the TTL.
	e.le.Demote()
	e.clock.Advance(time.Hour)
	e.le.Promote(2 * time.Second)
	if got := e.le.Lookup(3).Remaining(); got != 12*time.Second {
		t.Errorf("lease 3 remaining after re-promotion %v, want 10 s + 2 s", got)
	}
}

func TestCheckpointsOffWithoutCheckpointer(t *testing.T) {
	e := newEnv(t, Config{CheckpointInterval: time.Second})
	e.le.Promote(0)
	e.mustGrant(t, 1, 60)
	e.clock.Advance(10 * time.Second)
	e.le.tick()
	if n := e.le.checkpoints.len(); n != 0 {
		t.Errorf("%d checkpoints queued without a Checkpointer", n)
	}
}

func TestRecoverOnPrimary(t *testing.T) {
	e := newEnv(t, Config{})
	e.mustGrant(t, 1, 10)
	if err := e.le.Attach(1, []string{"k"}); err != nil {
		t.Fatal(err)
	}
	e.le.Promote(0)
	other := newEnv(t, Config{})
	other.mustGrant(t, 2, 30)
	if err := e.le.Recover(other.be, other.dels.newTxn(other.be)); err != nil {
		t.Fatal(err)
	}
	if got := ids(e.le.Leases()); !slices.Equal(got, []LeaseID{2}) {
		t.Fatalf("leases after Recover = %v, want [2]", got)
	}
	if e.le.GetLease("k") != NoLease {
		t.Error("attachment survived Recover")
	}
	if got := e.le.Lookup(2).Remaining(); got != 30*time.Second {
		t.Errorf("recovered lease on the primary: remaining %v, want 30 s", got)
	}
	if err := e.le.Revoke(2); err != nil || other.dels.txns != 1 {
		t.Errorf("Revoke after Recover = %v, txns on the new deleter %d", err, other.dels.txns)
	}
}

// TestLoop runs the real background loop on the fake clock.
func TestLoop(t *testing.T) {
	clock := newFakeClock()
	e := newEnv(t, Config{Clock: clock})
	e.le.Stop() // the env's loop-less lessor is not used
	le, err := NewLessor(Config{Backend: e.be, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer le.Stop()
	le.Promote(0)
	if _, err := le.Grant(1, 3); err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * time.Second)
	clock.Tick()
	select {
	case ls := <-le.ExpiredLeasesC():
		if got := ids(ls); !slices.Equal(got, []LeaseID{1}) {
			t.Fatalf("expired = %v, want [1]", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the loop reported nothing")
	}
	le.Stop()
	le.Stop()
}

// A checkpoint that falls due while the lease still shows its whole TTL
// (the election extension on promotion, rounded up) is looked at again one
// interval later instead of being dropped for good.
func TestCheckpointDueWithFullTTLIsRescheduled(t *testing.T) {
	rec := &checkpointRecorder{}
	e := newEnv(t, Config{Checkpointer: rec.propose, CheckpointInterval: 2 * time.Second})
	rec.le = e.le
	e.mustGrant(t, 1, 10)
	e.le.Promote(3 * time.Second) // expiry 13 s away: 2 s from now 11 s remain, rounded >= TTL
	e.clock.Advance(2 * time.Second)
	e.le.tick()
	if got := rec.take(); got != nil {
		t.Fatalf("checkpoints while the whole TTL remains: %v", got)
	}
	e.clock.Advance(2 * time.Second)
	e.le.tick()
	if got, want := rec.take(), []string{" 1:9"}; !slices.Equal(got, want) {
		t.Fatalf("checkpoints = %q, want %q (the lease must not leave checkpointing)", got, want)
	}
}
