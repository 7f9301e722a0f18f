package etcdserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairnkv/cairn/pkg/idutil"
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

// clusterMember is what MembershipAdmin needs from the member it changes:
// the applied member list, raft's view of leadership and replication, the
// peer connections, and a way to replicate a conf change.
type clusterMember interface {
	members() []*membership.Member
	IsIDRemoved(id uint64) bool
	IsLearner() bool
	Leader() uint64
	leads() bool
	// connectedSince is when the connection to member id last came up;
	// zero while it is down.
	connectedSince(id uint64) time.Time
	// RaftStatus is raft's view; on the leader, each member's progress.
	RaftStatus() (raft.Status, error)
	linearizableReadNotify(ctx context.Context) error
	waitCommittedApplied(ctx context.Context) error
	// replicateConfChange proposes cc and waits until it is applied; the
	// result is the member list after it.
	replicateConfChange(ctx context.Context, cc *raftpb.ConfChange) ([]*membership.Member, error)
}

// membershipRules is the part of the member's configuration that decides
// what a membership change may do.
type membershipRules struct {
	token        string // --initial-cluster-token, part of a new member's ID
	strict       bool   // --strict-reconfig-check
	maxLearners  int    // --max-learners
	addAsLearner bool   // --experimental-member-add-as-learner
	// This member's own learner settings (learner_auto.go).
	learnerReadOnly, learnerNoAutoPromote bool
}

// MembershipAdmin serves etcd's Cluster service on a member: it checks a
// change against the reconfiguration rules (reconfig_check.go), proposes it
// as a raft conf change, forwards a promotion from a follower to the leader
// (promote.go) and reports this member's learner settings to the leader.
type MembershipAdmin struct {
	self   uint64
	member clusterMember
	ids    *idutil.Generator // conf change IDs
	peers  *http.Client      // to the leader's peer URLs
	rules  membershipRules
}

func newMembershipAdmin(c *Config, self uint64, member clusterMember, ids *idutil.Generator) *MembershipAdmin {
	return &MembershipAdmin{self: self, member: member, ids: ids, peers: c.peerHTTP, rules: membershipRules{
		token: c.InitialClusterToken, strict: c.StrictReconfigCheck, maxLearners: c.MaxLearners,
		addAsLearner: c.MemberAddAsLearner, learnerReadOnly: c.LearnerReadOnly, learnerNoAutoPromote: c.LearnerNoAutoPromote,
	}}
}

// MemberList returns the members, after a read barrier when linearizable.
func (a *MembershipAdmin) MemberList(ctx context.Context, linearizable bool) ([]*membership.Member, error) {
	if linearizable {
		if err := a.member.linearizableReadNotify(ctx); err != nil {
			return nil, err
		}
	}
	return a.member.members(), nil
}

// MemberAdd adds a voter or a learner with peerURLs.
func (a *MembershipAdmin) MemberAdd(ctx context.Context, peerURLs []string, isLearner bool) (*membership.Member, []*membership.Member, error) {
	// etcd's rules and stored form: trimmed, normalized and sorted.
	peerURLs, err := membership.ParsePeerURLs(peerURLs)
	if err != nil {
		return nil, nil, errs.ErrBadURLs
	}
	// --experimental-member-add-as-learner: every new member starts as a
	// learner (and is promoted automatically, see learner_auto.go).
	isLearner = isLearner || a.rules.addAsLearner
	now := time.Now()
	m := &membership.Member{ID: membership.ComputeMemberID(peerURLs, a.rules.token, &now), PeerURLs: peerURLs, IsLearner: isLearner}
	if err := a.checkAdd(m); err != nil {
		return nil, nil, err
	}
	typ := raftpb.ConfChangeAddNode
	if isLearner {
		typ = raftpb.ConfChangeAddLearnerNode
	}
	members, err := a.proposeConfChange(ctx, typ, m)
	return m, members, err
}

// MemberRemove removes member id.
func (a *MembershipAdmin) MemberRemove(ctx context.Context, id uint64) ([]*membership.Member, error) {
	m := memberByID(a.member.members(), id)
	if m == nil {
		if a.member.IsIDRemoved(id) {
			return nil, errs.ErrIDRemoved
		}
		return nil, errs.ErrIDNotFound
	}
	if a.rules.strict {
		if err := mayRemoveMember(a.member.members(), id, a.self, a.member.connectedSince, time.Now()); err != nil {
			return nil, err
		}
	}
	return a.proposeConfChange(ctx, raftpb.ConfChangeRemoveNode, &membership.Member{ID: id})
}

// MemberUpdate changes the peer URLs of member id.
func (a *MembershipAdmin) MemberUpdate(ctx context.Context, id uint64, peerURLs []string) ([]*membership.Member, error) {
	// MemberAdd's rules. etcd v3.7.3 checks nothing here and its members
	// panic applying a URL without a port (at every restart too, as the
	// entry is committed), so refusing is the only sane answer. What
	// passes is stored as given, as etcd stores it.
	if _, err := membership.ParsePeerURLs(peerURLs); err != nil {
		return nil, errs.ErrBadURLs
	}
	m := memberByID(a.member.members(), id)
	if m == nil {
		return nil, errs.ErrIDNotFound
	}
	for _, other := range a.member.members() {
		if other.ID != id && sharesURL(other.PeerURLs, peerURLs) {
			return nil, errs.ErrPeerURLExists
		}
	}
	updated := *m
	updated.PeerURLs = peerURLs
	return a.proposeConfChange(ctx, raftpb.ConfChangeUpdateNode, &updated)
}

// MemberPromote makes learner id a voter once it has caught up.
func (a *MembershipAdmin) MemberPromote(ctx context.Context, id uint64) ([]*membership.Member, error) {
	if !a.member.leads() {
		// Only the leader knows how far the learner is: ask it. As in
		// etcd, a follower forwards without judging the member itself:
		// it may not have applied the learner's addition yet.
		return a.forwardPromote(ctx, id)
	}
	// Judge the membership as committed, not as applied so far (etcd's
	// waitAppliedIndex): the MemberAdd a client saw succeed elsewhere may
	// still be on its way through this member's apply loop.
	if err := a.member.waitCommittedApplied(ctx); err != nil {
		return nil, err
	}
	m := memberByID(a.member.members(), id)
	if m == nil {
		return nil, errs.ErrIDNotFound
	}
	if !m.IsLearner {
		return nil, errs.ErrMemberNotLearner
	}
	if err := a.learnerReady(id); err != nil {
		metrics.LearnerPromoteFailures.WithLabelValues(promoteFailureReason(err)).Inc()
		return nil, err
	}
	if a.rules.strict && !readyToPromote(a.member.members()) {
		return nil, errs.ErrNotEnoughStartedMembers
	}
	// etcd's form of a promotion (isPromote), with the whole member as
	// well: etcd members go by the flag, cairn members before it by the
	// member.
	promoted := membership.ChangeContext{Member: *m, IsPromote: true}
	promoted.IsLearner = false
	members, err := a.proposeMemberChange(ctx, raftpb.ConfChangeAddNode, m.ID, &promoted)
	if err == nil {
		metrics.LearnerPromoteSuccesses.Inc()
	}
	return members, err
}

func (a *MembershipAdmin) checkAdd(m *membership.Member) error {
	members := a.member.members()
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
	if a.member.IsIDRemoved(m.ID) {
		return errs.ErrIDRemoved
	}
	if m.IsLearner && learners >= a.rules.maxLearners {
		return errs.ErrTooManyLearners
	}
	if a.rules.strict {
		return mayAddMember(members, m.IsLearner, a.self, a.member.connectedSince, time.Now())
	}
	return nil
}

// learnerReady checks on the leader that the learner's log is within 10% of
// the leader's commit index.
func (a *MembershipAdmin) learnerReady(id uint64) error {
	st, err := a.member.RaftStatus()
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
func (a *MembershipAdmin) proposeConfChange(ctx context.Context, typ raftpb.ConfChangeType, m *membership.Member) ([]*membership.Member, error) {
	return a.proposeMemberChange(ctx, typ, m.ID, m)
}

// proposeMemberChange proposes a conf change of member nodeID whose context
// is change's JSON (a member, or a membership.ChangeContext).
func (a *MembershipAdmin) proposeMemberChange(ctx context.Context, typ raftpb.ConfChangeType, nodeID uint64, change any) ([]*membership.Member, error) {
	memberJSON, err := json.Marshal(change)
	if err != nil {
		return nil, err
	}
	id := a.ids.Next()
	return a.member.replicateConfChange(ctx, &raftpb.ConfChange{Id: &id, Type: typ.Enum(), NodeId: &nodeID, Context: memberJSON})
}

// memberByID is member id of ms, or nil.
func memberByID(ms []*membership.Member, id uint64) *membership.Member {
	for _, m := range ms {
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
