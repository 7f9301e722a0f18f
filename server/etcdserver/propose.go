package etcdserver

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/apply"
	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/metrics"
	"github.com/cairnkv/cairn/server/raftnode"
)

// exceedsApplyBacklog reports whether r must be refused because applying
// lags committing by more than maxApplyBacklog entries. With priority
// requests (the PriorityRequest feature gate) a LeaseRevoke may still go
// until twice that, so that expiring leases keep freeing keys under load,
// as in etcd.
func exceedsApplyBacklog(committed, applied uint64, r *pb.InternalRaftRequest, priority bool) bool {
	if committed <= applied+maxApplyBacklog {
		return false
	}
	return !(priority && r.GetLeaseRevoke() != nil && committed <= applied+2*maxApplyBacklog)
}

// propose sends r through raft and waits for its apply result.
func (s *Server) propose(ctx context.Context, r *pb.InternalRaftRequest) (_ *apply.Result, err error) {
	select {
	case <-s.stopc: // a non-blocking look costs no lock
		return nil, errs.ErrStopped
	default:
	}
	if exceedsApplyBacklog(s.node.Committed(), s.appliedIndex.Load(), r, s.cfg.PriorityRequests) {
		return nil, errs.ErrTooManyRequests
	}
	id := s.reqIDs.Next()
	r.Header = &pb.RequestHeader{ID: id}
	if err := s.gate.stampAuth(ctx, r); err != nil {
		return nil, err
	}
	data, err := proto.Marshal(r)
	if err != nil {
		return nil, err
	}
	if len(data) > int(s.cfg.MaxRequestBytes) {
		return nil, errs.ErrRequestTooLarge
	}
	resultc := s.proposals.Register(id)
	// r does not change from here on; apply may use it instead of data.
	s.localReqs.add(id, r)
	defer s.localReqs.take(id)
	metrics.ProposalsPending.Inc()
	proposed := time.Now()
	defer func() {
		success := strconv.FormatBool(err == nil)
		metrics.RequestSeconds.WithLabelValues(requestOp(r), success).Observe(time.Since(proposed).Seconds())
		metrics.ProposalsPending.Dec()
		if err != nil {
			metrics.ProposalsFailed.Inc()
		}
	}()
	start := time.Now()
	timeout := getTimer(s.cfg.requestTimeout())
	defer putTimer(timeout)
	s.node.Propose(ctx, start.Add(s.cfg.requestTimeout()), data, func(err error) { s.proposals.Trigger(id, err) })
	select {
	case x := <-resultc:
		switch res := x.(type) {
		case *apply.Result:
			return res, nil
		case error: // raft dropped the proposal, or its wait for a leader ended
			if errors.Is(res, context.DeadlineExceeded) || errors.Is(res, context.Canceled) {
				return nil, s.timeoutError(ctx, start)
			}
			return nil, proposeDropped(res)
		}
		return nil, errs.ErrStopped
	case <-timeout.C:
		s.proposals.Trigger(id, nil)
		return nil, s.timeoutError(ctx, start)
	case <-ctx.Done():
		s.proposals.Trigger(id, nil)
		return nil, s.timeoutError(ctx, start)
	}
	// No case on stopc: with hundreds of waiters, a shared channel in every
	// select is a lock they all contend on. Stop releases them instead
	// (proposals.TriggerAll), which arrives as a nil result.
}

// timerPool holds stopped timers: a proposal's wait reuses one instead of
// making a context with a deadline (a timer, a channel and a link into the
// caller's context) per request. Since Go 1.23 a stopped or reset timer
// delivers no stale tick, so reuse is safe.
var timerPool = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// getTimer returns a timer that fires after d.
func getTimer(d time.Duration) *time.Timer {
	t := timerPool.Get().(*time.Timer)
	t.Reset(d)
	return t
}

// putTimer stops t and keeps it for reuse.
func putTimer(t *time.Timer) {
	t.Stop()
	timerPool.Put(t)
}

// proposeError turns a failed wait into etcd's error: a canceled caller gets
// "request cancelled", a deadline "request timed out".
func proposeError(ctx context.Context, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return errs.ErrCanceled
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return errs.ErrTimeout
	}
	return err
}

// timeoutError explains a proposal that was not applied in time, as etcd
// does: the leader changed meanwhile, or this member lost its connection to
// the leader (or, as leader, to a quorum), or plainly timed out.
func (s *Server) timeoutError(ctx context.Context, start time.Time) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return errs.ErrCanceled
	}
	elected := s.node.LeaderElectedAt()
	electionWindow := 2 * time.Duration(s.cfg.ElectionTicks) * s.cfg.tickInterval()
	if start.Before(elected) && start.After(elected.Add(-electionWindow)) {
		return errs.ErrTimeoutDueToLeaderFail
	}
	switch lead := s.Leader(); {
	case lead == 0:
	case lead == s.id:
		if !s.connectedToQuorumSince(start) {
			return errs.ErrTimeoutDueToConnectionLost
		}
	default:
		if since := s.transport.ActiveSince(lead); since.IsZero() || since.After(start) {
			return errs.ErrTimeoutDueToConnectionLost
		}
	}
	return errs.ErrTimeout
}

// connectedToQuorumSince reports whether this member has been connected to
// a quorum of voters (counting itself) since t.
func (s *Server) connectedToQuorumSince(t time.Time) bool {
	st, err := s.node.Status()
	if err != nil {
		return false
	}
	voters := st.Config.Voters.IDs()
	connected := 0
	for id := range voters {
		if id == s.id {
			connected++
			continue
		}
		if since := s.transport.ActiveSince(id); !since.IsZero() && !since.After(t) {
			connected++
		}
	}
	return connected >= len(voters)/2+1
}

// proposeDropped maps raft refusing a proposal to the error etcd returns:
// raft's own "raft proposal dropped" (e.g. during a leadership transfer), or
// "server stopped". Without a leader proposals are held, not dropped.
func proposeDropped(err error) error {
	if errors.Is(err, raftnode.ErrStopped) {
		return errs.ErrStopped
	}
	return err
}

// proposeRequest proposes r and returns its response with a full header.
func (s *Server) proposeRequest(ctx context.Context, r *pb.InternalRaftRequest) (proto.Message, error) {
	res, err := s.propose(ctx, r)
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, res.Err
	}
	return res.Resp, nil
}

// replicateConfChange proposes cc and waits until the apply loop has
// applied it; the result is the member list after the change.
func (s *Server) replicateConfChange(ctx context.Context, cc *raftpb.ConfChange) ([]*membership.Member, error) {
	id := cc.GetId()
	resultc := s.proposals.Register(id)
	cctx, cancel := context.WithTimeout(ctx, s.cfg.requestTimeout())
	defer cancel()
	if err := s.node.ProposeConfChange(cctx, cc); err != nil {
		s.proposals.Trigger(id, nil)
		return nil, proposeError(cctx, err)
	}
	select {
	case x := <-resultc:
		switch r := x.(type) {
		case []*membership.Member:
			return r, nil
		case error:
			return nil, r
		}
		return nil, errs.ErrStopped
	case <-cctx.Done():
		s.proposals.Trigger(id, nil)
		return nil, proposeError(cctx, cctx.Err())
	}
}
