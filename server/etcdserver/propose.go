package etcdserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/idutil"
	"github.com/cairnkv/cairn/pkg/wait"
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

// proposeNode is the raft node's part in proposing (*raftnode.Node).
type proposeNode interface {
	Committed() uint64
	Propose(ctx context.Context, deadline time.Time, data []byte, onDrop func(error))
	ProposeConfChange(ctx context.Context, cc raftpb.ConfChangeI) error
	Leader() uint64
	LeaderElectedAt() time.Time
	Status() (raft.Status, error)
}

// peerLinks tells since when the connection to a peer is up (zero while
// it is down) (*peer.Transport).
type peerLinks interface {
	ActiveSince(id uint64) time.Time
}

// proposalStamper puts the sender of ctx into a proposal's header (the
// member's authGate).
type proposalStamper interface {
	stampAuth(ctx context.Context, r *pb.InternalRaftRequest) error
}

// proposeLimits is the part of the member's configuration proposing uses.
type proposeLimits struct {
	request         time.Duration // how long a proposal may wait (Config.requestTimeout)
	electionWindow  time.Duration // two election timeouts: a leader change this recent explains a timeout
	maxRequestBytes uint          // --max-request-bytes
	priority        bool          // the PriorityRequest feature gate
}

// proposer sends the member's requests and conf changes through raft and
// hands each caller the result the apply loop reports for its ID. It owns
// the waits (proposals) and the requests not yet applied (local), and
// explains a proposal that timed out as etcd does.
type proposer struct {
	self      uint64
	node      proposeNode // set once the node exists, before the member starts
	links     peerLinks   // likewise
	stamp     proposalStamper
	applied   *atomic.Uint64 // the member's applied index
	ids       *idutil.Generator
	proposals *wait.Registry
	local     *localRequests // proposed here, not yet applied
	limits    proposeLimits
	stop      <-chan struct{}
	lg        *zap.Logger
}

func newProposer(self uint64, c *Config, stamp proposalStamper, applied *atomic.Uint64, ids *idutil.Generator, stop <-chan struct{}) *proposer {
	return &proposer{self: self, stamp: stamp, applied: applied, ids: ids, stop: stop, lg: c.Logger,
		proposals: wait.NewRegistry(), local: newLocalRequests(),
		limits: proposeLimits{request: c.requestTimeout(), electionWindow: 2 * time.Duration(c.ElectionTicks) * c.tickInterval(),
			maxRequestBytes: c.MaxRequestBytes, priority: c.PriorityRequests}}
}

// answer wakes the caller waiting for proposal id with x (an
// *apply.Result, a member list, an error, or nil: stopped).
func (p *proposer) answer(id uint64, x any) { p.proposals.Trigger(id, x) }

// stopAll wakes every waiting caller with "stopped".
func (p *proposer) stopAll() { p.proposals.TriggerAll(nil) }

// propose sends r through raft and waits for its apply result.
func (p *proposer) propose(ctx context.Context, r *pb.InternalRaftRequest) (_ *apply.Result, err error) {
	select {
	case <-p.stop: // a non-blocking look costs no lock
		return nil, errs.ErrStopped
	default:
	}
	if exceedsApplyBacklog(p.node.Committed(), p.applied.Load(), r, p.limits.priority) {
		return nil, errs.ErrTooManyRequests
	}
	id := p.ids.Next()
	r.Header = &pb.RequestHeader{ID: id}
	if err := p.stamp.stampAuth(ctx, r); err != nil {
		return nil, err
	}
	data, err := marshalRequest(r)
	if err != nil {
		return nil, err
	}
	if len(data) > int(p.limits.maxRequestBytes) {
		return nil, errs.ErrRequestTooLarge
	}
	resultc := p.proposals.Register(id)
	// r does not change from here on; apply may use it instead of data.
	p.local.add(id, r)
	defer p.local.take(id)
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
	timeout := getTimer(p.limits.request)
	defer putTimer(timeout)
	p.node.Propose(ctx, start.Add(p.limits.request), data, func(err error) { p.proposals.Trigger(id, err) })
	select {
	case x := <-resultc:
		switch res := x.(type) {
		case *apply.Result:
			return res, nil
		case error: // raft dropped the proposal, or its wait for a leader ended
			if errors.Is(res, context.DeadlineExceeded) || errors.Is(res, context.Canceled) {
				return nil, p.timeoutError(ctx, start)
			}
			return nil, proposeDropped(res)
		}
		return nil, errs.ErrStopped
	case <-timeout.C:
		p.proposals.Trigger(id, nil)
		return nil, p.timeoutError(ctx, start)
	case <-ctx.Done():
		p.proposals.Trigger(id, nil)
		return nil, p.timeoutError(ctx, start)
	}
	// No case on stopc: with hundreds of waiters, a shared channel in every
	// select is a lock they all contend on. Stop releases them instead
	// (proposals.TriggerAll), which arrives as a nil result.
}

// raiseNoSpaceThenAnswer raises the NOSPACE alarm through raft for a write
// that was applied but took the backend over its quota, and only then
// answers its proposer, as etcd does.
func (p *proposer) raiseNoSpaceThenAnswer(id uint64, result *apply.Result, quotaBytes int64) {
	p.lg.Warn("message exceeded backend quota; raising alarm", zap.Int64("quota-size-bytes", quotaBytes))
	ctx, cancel := context.WithTimeout(context.Background(), p.limits.request)
	defer cancel()
	alarm := &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: p.self, Alarm: pb.AlarmType_NOSPACE}
	if _, err := p.propose(ctx, &pb.InternalRaftRequest{Alarm: alarm}); err != nil {
		p.lg.Warn("failed to raise NOSPACE alarm", zap.Error(err))
	}
	p.answer(id, result)
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
func (p *proposer) timeoutError(ctx context.Context, start time.Time) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return errs.ErrCanceled
	}
	elected := p.node.LeaderElectedAt()
	if start.Before(elected) && start.After(elected.Add(-p.limits.electionWindow)) {
		return errs.ErrTimeoutDueToLeaderFail
	}
	switch lead := p.node.Leader(); {
	case lead == 0:
	case lead == p.self:
		if !p.connectedToQuorumSince(start) {
			return errs.ErrTimeoutDueToConnectionLost
		}
	default:
		if since := p.links.ActiveSince(lead); since.IsZero() || since.After(start) {
			return errs.ErrTimeoutDueToConnectionLost
		}
	}
	return errs.ErrTimeout
}

// connectedToQuorumSince reports whether this member has been connected to
// a quorum of voters (counting itself) since t.
func (p *proposer) connectedToQuorumSince(t time.Time) bool {
	st, err := p.node.Status()
	if err != nil {
		return false
	}
	voters := st.Config.Voters.IDs()
	connected := 0
	for id := range voters {
		if id == p.self {
			connected++
			continue
		}
		if since := p.links.ActiveSince(id); !since.IsZero() && !since.After(t) {
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
func (p *proposer) proposeRequest(ctx context.Context, r *pb.InternalRaftRequest) (proto.Message, error) {
	res, err := p.propose(ctx, r)
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, res.Err
	}
	return res.Resp, nil
}

// requestProposer is the member as the services propose through it.
type requestProposer interface {
	proposeRequest(ctx context.Context, r *pb.InternalRaftRequest) (proto.Message, error)
}

// proposeAs proposes r through p and returns the applied response as the
// T that r's kind of request is answered with.
func proposeAs[T proto.Message](ctx context.Context, p requestProposer, r *pb.InternalRaftRequest) (T, error) {
	var zero T
	resp, err := p.proposeRequest(ctx, r)
	if err != nil {
		return zero, err
	}
	out, ok := resp.(T)
	if !ok {
		return zero, fmt.Errorf("etcdserver: unexpected response %T (want %T)", resp, zero)
	}
	return out, nil
}

// headedAnswer is an applied response with a response header.
type headedAnswer interface {
	proto.Message
	GetHeader() *pb.ResponseHeader
}

// answerProposer is the member as a service proposes through it when the
// member completes the header of the answer.
type answerProposer interface {
	requestProposer
	fillHeader(h *pb.ResponseHeader)
}

// proposeAnswer proposes r through m and returns the applied response as T,
// with the header the applier started completed by the member.
func proposeAnswer[T headedAnswer](ctx context.Context, m answerProposer, r *pb.InternalRaftRequest) (T, error) {
	out, err := proposeAs[T](ctx, m, r)
	if err != nil {
		return out, err
	}
	m.fillHeader(out.GetHeader())
	return out, nil
}

// replicateConfChange proposes cc and waits until the apply loop has
// applied it; the result is the member list after the change.
func (p *proposer) replicateConfChange(ctx context.Context, cc *raftpb.ConfChange) ([]*membership.Member, error) {
	id := cc.GetId()
	resultc := p.proposals.Register(id)
	cctx, cancel := context.WithTimeout(ctx, p.limits.request)
	defer cancel()
	if err := p.node.ProposeConfChange(cctx, cc); err != nil {
		p.proposals.Trigger(id, nil)
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
		p.proposals.Trigger(id, nil)
		return nil, proposeError(cctx, cctx.Err())
	}
}
