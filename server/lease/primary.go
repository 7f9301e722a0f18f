package lease

import (
	"context"
	"math"
	"slices"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/metrics"
)

// IsPrimary tells whether the lessor is the primary (the member leads).
func (le *Lessor) IsPrimary() bool {
	le.mu.RLock()
	defer le.mu.RUnlock()
	return le.isPrimary()
}

// isPrimary: the caller holds le.mu.
func (le *Lessor) isPrimary() bool { return le.demotec != nil }

// Promote makes the lessor primary: every lease now expires extend plus its
// checkpointed remaining TTL (or its TTL) from now. etcd's leader promotes
// with one election timeout once it has applied its term's first entry.
// With many leases, expiries bunched within a second are spread so at most
// three quarters of the revoke rate fall due per second.
func (le *Lessor) Promote(extend time.Duration) {
	le.mu.Lock()
	defer le.mu.Unlock()
	if le.demotec == nil {
		le.demotec = make(chan struct{})
	}
	le.checkpoints = newTimeQueue()
	now := le.clock.Now()
	le.refreshAll(now, extend)
	if len(le.leases) >= leaseRevokeRate {
		le.spreadExpiries()
	}
}

// refreshAll restarts every lease's countdown; the caller holds le.mu.
func (le *Lessor) refreshAll(now time.Time, extend time.Duration) {
	for _, l := range le.leases {
		le.expiries.set(l.id, l.refresh(now, extend))
		le.scheduleCheckpoint(l, now)
	}
}

// spreadExpiries walks the leases by expiry and, inside any run of
// expiries less than a second apart, gives the k-th lease beyond the
// per-second target an expiry of at least the run's start + k/target
// seconds. The caller holds le.mu.
func (le *Lessor) spreadExpiries() {
	const target = 3 * leaseRevokeRate / 4
	ls := le.byExpiry()
	start := ls[0].Expiry()
	end := start.Add(time.Second)
	n := 0
	for _, l := range ls {
		exp := l.Expiry()
		if exp.After(end) {
			start, end, n = exp, exp.Add(time.Second), 1
			continue
		}
		n++
		if n <= target {
			continue
		}
		slot := start.Add(time.Duration(n) * time.Second / target)
		end = slot
		if slot.After(exp) {
			l.setExpiry(slot)
			le.expiries.set(l.id, slot)
		}
	}
}

// byExpiry lists the leases by expiry, ties by ID; the caller holds le.mu.
func (le *Lessor) byExpiry() []*Lease {
	ls := make([]*Lease, 0, len(le.leases))
	for _, l := range le.leases {
		ls = append(ls, l)
	}
	slices.SortFunc(ls, func(a, b *Lease) int {
		if c := a.Expiry().Compare(b.Expiry()); c != 0 {
			return c
		}
		return compareIDs(a.id, b.id)
	})
	return ls
}

// Demote makes the lessor a follower: no lease expires any more, pending
// checkpoints are dropped and Renew calls waiting on an expired lease
// return ErrNotPrimary.
func (le *Lessor) Demote() {
	le.mu.Lock()
	defer le.mu.Unlock()
	for _, l := range le.leases {
		l.setExpiry(time.Time{})
	}
	le.expiries = newTimeQueue()
	le.checkpoints = newTimeQueue()
	if le.demotec != nil {
		close(le.demotec)
		le.demotec = nil
	}
}

// Renew restarts lease id's countdown at its full TTL and returns the TTL
// (a keepalive). Primary only: ErrNotPrimary elsewhere. A lease that has
// expired but is not revoked yet makes Renew wait: errs.ErrLeaseNotFound
// once it is revoked, ErrNotPrimary if the lessor is demoted or stopped
// first, ctx's error if ctx ends first. A checkpointed remaining TTL is
// first cleared through the Checkpointer, so a new leader does not count
// from the stale checkpoint.
func (le *Lessor) Renew(ctx context.Context, id LeaseID) (int64, error) {
	l, demotec, err := le.renewable(id)
	if err != nil {
		return -1, err
	}
	if l.expired(le.clock.Now()) {
		return -1, le.waitExpired(ctx, l, demotec)
	}
	if le.cp != nil && l.CheckpointedTTL() > 0 {
		cp := []*pb.LeaseCheckpoint{{ID: int64(id), Remaining_TTL: 0}}
		if err := le.cp(ctx, cp); err != nil {
			return -1, err
		}
	}
	return le.refreshRenewed(id)
}

// renewable looks lease id up on the primary.
func (le *Lessor) renewable(id LeaseID) (*Lease, chan struct{}, error) {
	le.mu.RLock()
	defer le.mu.RUnlock()
	if !le.isPrimary() {
		return nil, nil, ErrNotPrimary
	}
	l := le.leases[id]
	if l == nil {
		return nil, nil, errs.ErrLeaseNotFound
	}
	return l, le.demotec, nil
}

// waitExpired waits for the fate of an expired lease.
func (le *Lessor) waitExpired(ctx context.Context, l *Lease, demotec chan struct{}) error {
	select {
	case <-l.revokec:
		return errs.ErrLeaseNotFound
	case <-demotec:
		return ErrNotPrimary
	case <-le.ctx.Done():
		return ErrNotPrimary
	case <-ctx.Done():
		return ctx.Err()
	}
}

// refreshRenewed restarts the countdown if the lease and the primacy
// survived the checkpoint round trip.
func (le *Lessor) refreshRenewed(id LeaseID) (int64, error) {
	le.mu.Lock()
	defer le.mu.Unlock()
	if !le.isPrimary() {
		return -1, ErrNotPrimary
	}
	l := le.leases[id]
	if l == nil {
		return -1, errs.ErrLeaseNotFound
	}
	le.expiries.set(id, l.refresh(le.clock.Now(), 0))
	metrics.LeaseRenewed.Inc()
	return l.ttl, nil
}

// run is the primary's background loop: every tick it reports expired
// leases and proposes due checkpoints. On a follower a tick does nothing.
func (le *Lessor) run() {
	defer close(le.donec)
	t := le.clock.NewTicker(tickInterval)
	defer t.Stop()
	for {
		le.tick()
		select {
		case <-t.C():
		case <-le.ctx.Done():
			return
		}
	}
}

func (le *Lessor) tick() {
	le.reportExpired()
	le.proposeCheckpoints()
}

// reportExpired sends the due expired leases, at most revokeLimit, unless
// the reader is behind (they are reported again after the retry interval).
func (le *Lessor) reportExpired() {
	le.mu.Lock()
	var ls []*Lease
	if le.isPrimary() {
		ls = le.dueExpired(le.clock.Now())
	}
	le.mu.Unlock()
	if len(ls) == 0 {
		return
	}
	select {
	case le.expiredC <- ls:
	default:
		le.lg.Warn("expired leases not taken; reporting them again later", zap.Int("leases", len(ls)))
	}
}

// dueExpired pops the leases whose expiry passed, earliest first, and
// requeues each for a recheck after the retry interval. The caller holds le.mu.
func (le *Lessor) dueExpired(now time.Time) []*Lease {
	var ls []*Lease
	for len(ls) < le.revokeLimit {
		id, at, ok := le.expiries.peek()
		if !ok || at.After(now) {
			break
		}
		l := le.leases[id]
		switch {
		case l == nil || l.Expiry().IsZero():
			le.expiries.remove(id)
		case !l.expired(now):
			le.expiries.set(id, l.Expiry())
		default:
			le.expiries.set(id, now.Add(le.retryInterval))
			ls = append(ls, l)
		}
	}
	return ls
}

// scheduleCheckpoint queues a checkpoint of l one interval from now if
// checkpointing is on and l lives longer than an interval. The caller
// holds le.mu.
func (le *Lessor) scheduleCheckpoint(l *Lease, now time.Time) {
	if le.cp != nil && l.countdownTTL() > int64(le.checkpointInterval.Seconds()) {
		le.checkpoints.set(l.id, now.Add(le.checkpointInterval))
	}
}

// proposeCheckpoints hands the due checkpoints, at most checkpointLimit, to
// the Checkpointer.
func (le *Lessor) proposeCheckpoints() {
	if le.cp == nil {
		return
	}
	le.mu.Lock()
	var cps []*pb.LeaseCheckpoint
	if le.isPrimary() {
		cps = le.dueCheckpoints(le.clock.Now())
	}
	le.mu.Unlock()
	if len(cps) == 0 {
		return
	}
	if err := le.cp(le.ctx, cps); err != nil {
		le.lg.Warn("failed to checkpoint leases", zap.Int("leases", len(cps)), zap.Error(err))
	}
}

// dueCheckpoints pops the due checkpoints of live, unexpired leases that
// have used up some of their TTL. The caller holds le.mu.
func (le *Lessor) dueCheckpoints(now time.Time) []*pb.LeaseCheckpoint {
	var cps []*pb.LeaseCheckpoint
	for len(cps) < le.checkpointLimit {
		id, ok := le.checkpoints.popDue(now)
		if !ok {
			break
		}
		l := le.leases[id]
		if l == nil || l.expired(now) || l.Expiry().IsZero() {
			continue
		}
		remaining := int64(math.Ceil(l.Expiry().Sub(now).Seconds()))
		if remaining >= l.ttl {
			// Nothing used up yet (rounding up): look again later rather
			// than dropping the lease from checkpointing for good.
			le.scheduleCheckpoint(l, now)
			continue
		}
		cps = append(cps, &pb.LeaseCheckpoint{ID: int64(id), Remaining_TTL: remaining})
	}
	return cps
}
