package etcdserver

import (
	"context"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/metrics"
)

// viewedNode is the raft node as raftView reads it (*raftnode.Node).
type viewedNode interface {
	Leader() uint64
	LeaderChanged() <-chan struct{}
	Status() (raft.Status, error)
	Campaign(ctx context.Context) error
	LastTick() time.Time
}

// raftView is what this member knows of raft: who leads, the
// configuration it last applied (and whether it is a learner in it), how
// long its peer connections are up, and how far the applied index trails
// the commit index.
type raftView struct {
	self    uint64
	node    viewedNode    // set once the node exists, before the member starts
	links   peerLinks     // likewise
	applied appliedWaiter // likewise
	stop    <-chan struct{}
	lg      *zap.Logger
	tick    time.Duration    // raft's tick (--heartbeat-interval)
	now     func() time.Time // time.Now; tests set it

	confState *raftpb.ConfState // written by the apply loop (or at start) only
	learner   atomic.Bool       // this member is a learner in confState
}

// leads reports whether this member is the raft leader now.
func (v *raftView) leads() bool { return v.node.Leader() == v.self }

// loopActive reports whether raft's loop ticked within the last three
// ticks, which a loop held up (a WAL write that does not return, say)
// does not. While it ticks, raft's CheckQuorum steps a leader down within
// an election timeout of losing its quorum, so a lease renewal can trust
// leads() without a quorum round, as etcd v3.7 does.
func (v *raftView) loopActive() bool {
	return v.now().Sub(v.node.LastTick()) < 3*v.tick
}

// leaderChanged is closed at the next change of leader.
func (v *raftView) leaderChanged() <-chan struct{} { return v.node.LeaderChanged() }

// connectedSince is when the peer connection to member id last came up;
// zero while it is down.
func (v *raftView) connectedSince(id uint64) time.Time { return v.links.ActiveSince(id) }

// isLearner reports whether this member is a learner.
func (v *raftView) isLearner() bool { return v.learner.Load() }

// setConfState records raft's configuration (apply loop or start only).
func (v *raftView) setConfState(cs *raftpb.ConfState) {
	v.confState = cs
	learner := false
	for _, id := range cs.GetLearners() {
		learner = learner || id == v.self
	}
	v.learner.Store(learner)
	metrics.SetLearner(learner)
}

// isSingleVoter reports whether this member is the only voter: by the
// configuration recorded so far, else by the initial cluster (of
// initialMembers members). A forced new cluster on an existing WAL
// (forcedOnWAL) is one: every other member is removed by committed entries.
func (v *raftView) isSingleVoter(forcedOnWAL bool, initialMembers int) bool {
	if forcedOnWAL {
		return true
	}
	if v.confState != nil {
		return len(v.confState.GetVoters()) == 1 && v.confState.GetVoters()[0] == v.self
	}
	return initialMembers == 1
}

// waitCommittedApplied waits until every entry committed now is applied.
func (v *raftView) waitCommittedApplied(ctx context.Context) error {
	st, err := v.node.Status()
	if err != nil {
		return errs.ErrStopped
	}
	select {
	case <-v.applied.Wait(st.GetCommit()):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-v.stop:
		return errs.ErrStopped
	}
}

// campaignWhenApplied starts an election once every entry committed before
// the start is applied: raft refuses to campaign while committed conf changes
// are unapplied, and a lone voter has nobody else to start one.
func (v *raftView) campaignWhenApplied() {
	st, err := v.node.Status()
	if err != nil {
		return
	}
	select {
	case <-v.applied.Wait(st.GetCommit()):
	case <-v.stop:
		return
	}
	if err := v.node.Campaign(context.Background()); err != nil {
		v.lg.Warn("campaign failed", zap.Error(err))
	}
}
