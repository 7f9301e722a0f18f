package etcdserver

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/metrics"
)

// Runtime membership changes (the Cluster service). Each change is a raft
// conf change carrying the member as JSON; the proposer waits on the conf
// change's ID, which the apply loop triggers with the member list after the
// change.

// learnerReadyPercent is how close (in log entries) a learner must be to the
// leader before it may be promoted: etcd's 90% rule.
const learnerReadyPercent = 0.9

// MemberList returns the members, after a read barrier when linearizable.
func (s *Server) MemberList(ctx context.Context, linearizable bool) ([]*membership.Member, error) {
	if linearizable {
		if err := s.linearizableReadNotify(ctx); err != nil {
			return nil, err
		}
	}
	return s.members(), nil
}

// MemberAdd adds a voter or a learner with peerURLs.
func (s *Server) MemberAdd(ctx context.Context, peerURLs []string, isLearner bool) (*membership.Member, []*membership.Member, error) {
	// etcd's rules and stored form: trimmed, normalized and sorted.
	peerURLs, err := membership.ParsePeerURLs(peerURLs)
	if err != nil {
		return nil, nil, errs.ErrBadURLs
	}
	// --experimental-member-add-as-learner: every new member starts as a
	// learner (and is promoted automatically, see learner_auto.go).
	isLearner = isLearner || s.cfg.MemberAddAsLearner
	now := time.Now()
	m := &membership.Member{ID: membership.ComputeMemberID(peerURLs, s.cfg.InitialClusterToken, &now), PeerURLs: peerURLs, IsLearner: isLearner}
	if err := s.checkAdd(m); err != nil {
		return nil, nil, err
	}
	typ := raftpb.ConfChangeAddNode
	if isLearner {
		typ = raftpb.ConfChangeAddLearnerNode
	}
	members, err := s.proposeConfChange(ctx, typ, m)
	return m, members, err
}

// MemberRemove removes member id.
func (s *Server) MemberRemove(ctx context.Context, id uint64) ([]*membership.Member, error) {
	m := s.findMember(id)
	if m == nil {
		if s.IsIDRemoved(id) {
			return nil, errs.ErrIDRemoved
		}
		return nil, errs.ErrIDNotFound
	}
	if s.cfg.StrictReconfigCheck {
		if err := mayRemoveMember(s.members(), id, s.id, s.transport.ActiveSince, time.Now()); err != nil {
			return nil, err
		}
	}
	return s.proposeConfChange(ctx, raftpb.ConfChangeRemoveNode, &membership.Member{ID: id})
}

// MemberUpdate changes the peer URLs of member id.
func (s *Server) MemberUpdate(ctx context.Context, id uint64, peerURLs []string) ([]*membership.Member, error) {
	// MemberAdd's rules. etcd v3.7.3 checks nothing here and its members
	// panic applying a URL without a port (at every restart too, as the
	// entry is committed), so refusing is the only sane answer. What
	// passes is stored as given, as etcd stores it.
	if _, err := membership.ParsePeerURLs(peerURLs); err != nil {
		return nil, errs.ErrBadURLs
	}
	m := s.findMember(id)
	if m == nil {
		return nil, errs.ErrIDNotFound
	}
	for _, other := range s.members() {
		if other.ID != id && sharesURL(other.PeerURLs, peerURLs) {
			return nil, errs.ErrPeerURLExists
		}
	}
	updated := *m
	updated.PeerURLs = peerURLs
	return s.proposeConfChange(ctx, raftpb.ConfChangeUpdateNode, &updated)
}

// MemberPromote makes learner id a voter once it has caught up.
func (s *Server) MemberPromote(ctx context.Context, id uint64) ([]*membership.Member, error) {
	if s.Leader() != s.id {
		// Only the leader knows how far the learner is: ask it. As in
		// etcd, a follower forwards without judging the member itself:
		// it may not have applied the learner's addition yet.
		return s.forwardPromote(ctx, id)
	}
	// Judge the membership as committed, not as applied so far (etcd's
	// waitAppliedIndex): the MemberAdd a client saw succeed elsewhere may
	// still be on its way through this member's apply loop.
	if err := s.waitCommittedApplied(ctx); err != nil {
		return nil, err
	}
	m := s.findMember(id)
	if m == nil {
		return nil, errs.ErrIDNotFound
	}
	if !m.IsLearner {
		return nil, errs.ErrMemberNotLearner
	}
	if err := s.learnerReady(id); err != nil {
		metrics.LearnerPromoteFailures.WithLabelValues(promoteFailureReason(err)).Inc()
		return nil, err
	}
	if s.cfg.StrictReconfigCheck && !readyToPromote(s.members()) {
		return nil, errs.ErrNotEnoughStartedMembers
	}
	// etcd's form of a promotion (isPromote), with the whole member as
	// well: etcd members go by the flag, cairn members before it by the
	// member.
	promoted := membership.ChangeContext{Member: *m, IsPromote: true}
	promoted.IsLearner = false
	members, err := s.proposeMemberChange(ctx, raftpb.ConfChangeAddNode, m.ID, &promoted)
	if err == nil {
		metrics.LearnerPromoteSuccesses.Inc()
	}
	return members, err
}

// waitCommittedApplied waits until every entry committed now is applied.
func (s *Server) waitCommittedApplied(ctx context.Context) error {
	st, err := s.node.Status()
	if err != nil {
		return errs.ErrStopped
	}
	select {
	case <-s.appliedWait.Wait(st.GetCommit()):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stopc:
		return errs.ErrStopped
	}
}

func (s *Server) checkAdd(m *membership.Member) error {
	members := s.members()
	learners := 0
	for _, o := range members {
		if o.ID == m.ID {
			return errs.ErrIDExists
		}
		if sharesURL(o.PeerURLs, m.PeerURLs) {
			return errs.ErrPeerURLExists
		}
		if o.IsLearner {
			learners++
		}
	}
	if s.IsIDRemoved(m.ID) {
		return errs.ErrIDRemoved
	}
	if m.IsLearner && learners >= s.cfg.MaxLearners {
		return errs.ErrTooManyLearners
	}
	if s.cfg.StrictReconfigCheck {
		return mayAddMember(members, m.IsLearner, s.id, s.transport.ActiveSince, time.Now())
	}
	return nil
}

// learnerReady checks on the leader that the learner's log is within 10% of
// the leader's commit index.
func (s *Server) learnerReady(id uint64) error {
	st, err := s.node.Status()
	if err != nil {
		return err
	}
	pr, ok := st.Progress[id]
	if !ok {
		return errs.ErrIDNotFound
	}
	if float64(pr.Match) < float64(st.GetCommit())*learnerReadyPercent {
		return errs.ErrLearnerNotReady
	}
	return nil
}

// proposeConfChange proposes a conf change for m and waits until it is
// applied; the result is the member list after it.
func (s *Server) proposeConfChange(ctx context.Context, typ raftpb.ConfChangeType, m *membership.Member) ([]*membership.Member, error) {
	return s.proposeMemberChange(ctx, typ, m.ID, m)
}

// proposeMemberChange proposes a conf change of member nodeID whose context
// is change's JSON (a member, or a membership.ChangeContext).
func (s *Server) proposeMemberChange(ctx context.Context, typ raftpb.ConfChangeType, nodeID uint64, change any) ([]*membership.Member, error) {
	memberJSON, err := json.Marshal(change)
	if err != nil {
		return nil, err
	}
	id := s.reqIDs.Next()
	cc := &raftpb.ConfChange{Id: &id, Type: typ.Enum(), NodeId: &nodeID, Context: memberJSON}
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

func (s *Server) findMember(id uint64) *membership.Member {
	for _, m := range s.members() {
		if m.ID == id {
			return m
		}
	}
	return nil
}

func sharesURL(a, b []string) bool {
	for _, u := range a {
		if slices.Contains(b, u) {
			return true
		}
	}
	return false
}

// promoteFailureReason labels a refused promotion with the message etcd
// uses (its own error text, as clients see it).
func promoteFailureReason(err error) string {
	if errors.Is(err, errs.ErrLearnerNotReady) {
		return rpctypes.ErrorDesc(rpctypes.ErrGRPCLearnerNotReady)
	}
	return err.Error()
}
