package etcdserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/idutil"
	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/membership"
)

// fakeClusterMember is a member as MembershipAdmin sees it, without raft:
// a member list, connections and raft progress chosen by the test, and conf
// changes recorded and applied to the list at once.
type fakeClusterMember struct {
	self, leader uint64
	list         []*membership.Member
	connected    map[uint64]time.Time
	match        map[uint64]uint64 // raft progress of each member
	commit       uint64
	changes      []*raftpb.ConfChange
}

func (f *fakeClusterMember) members() []*membership.Member                { return f.list }
func (f *fakeClusterMember) IsIDRemoved(uint64) bool                      { return false }
func (f *fakeClusterMember) IsLearner() bool                              { return false }
func (f *fakeClusterMember) Leader() uint64                               { return f.leader }
func (f *fakeClusterMember) leads() bool                                  { return f.leader == f.self }
func (f *fakeClusterMember) connectedSince(id uint64) time.Time           { return f.connected[id] }
func (f *fakeClusterMember) linearizableReadNotify(context.Context) error { return nil }
func (f *fakeClusterMember) waitCommittedApplied(context.Context) error   { return nil }
func (f *fakeClusterMember) RaftStatus() (raft.Status, error) {
	st := raft.Status{Progress: map[uint64]tracker.Progress{}}
	commit := f.commit
	st.ID, st.HardState = f.self, &raftpb.HardState{Commit: &commit}
	for id, m := range f.match {
		st.Progress[id] = tracker.Progress{Match: m}
	}
	return st, nil
}

// replicateConfChange applies cc to the list as the apply loop would.
func (f *fakeClusterMember) replicateConfChange(_ context.Context, cc *raftpb.ConfChange) ([]*membership.Member, error) {
	f.changes = append(f.changes, cc)
	switch cc.GetType() {
	case raftpb.ConfChangeAddNode, raftpb.ConfChangeAddLearnerNode:
		var m membership.Member
		if err := json.Unmarshal(cc.GetContext(), &m); err != nil {
			return nil, err
		}
		if old := memberByID(f.list, m.ID); old != nil {
			old.IsLearner = m.IsLearner
		} else {
			f.list = append(f.list, &m)
		}
	case raftpb.ConfChangeRemoveNode:
		for i, m := range f.list {
			if m.ID == cc.GetNodeId() {
				f.list = append(f.list[:i], f.list[i+1:]...)
				break
			}
		}
	}
	return f.list, nil
}

// threeVoters: members 1-3 started and connected for an hour, seen from 1.
func threeVoters() *fakeClusterMember {
	long := time.Now().Add(-time.Hour)
	return &fakeClusterMember{self: 1, leader: 1,
		list: []*membership.Member{
			{ID: 1, Name: "a", PeerURLs: []string{"http://a:2380"}},
			{ID: 2, Name: "b", PeerURLs: []string{"http://b:2380"}},
			{ID: 3, Name: "c", PeerURLs: []string{"http://c:2380"}},
		},
		connected: map[uint64]time.Time{2: long, 3: long},
		match:     map[uint64]uint64{},
	}
}

func newTestMembershipAdmin(f *fakeClusterMember, rules membershipRules) *MembershipAdmin {
	if rules.maxLearners == 0 {
		rules.maxLearners = 1
	}
	return &MembershipAdmin{self: f.self, member: f, ids: idutil.NewGenerator(uint16(f.self), time.Unix(0, 0)),
		peers: http.DefaultClient, rules: rules}
}

func TestMembershipAdminStrictCheckRefusesRemovalThatLosesQuorum(t *testing.T) {
	f := threeVoters()
	f.connected[3] = time.Time{} // member 3 is down
	a := newTestMembershipAdmin(f, membershipRules{strict: true})
	// Without 2, only 1 of the remaining two voters would be connected.
	if _, err := a.MemberRemove(testCtx(t), 2); !errors.Is(err, errs.ErrUnhealthy) {
		t.Fatalf("remove of a connected voter with another down: %v, want ErrUnhealthy", err)
	}
	if len(f.changes) != 0 {
		t.Fatalf("a refused removal was proposed: %v", f.changes)
	}
	// The member that is down may go: the others keep their quorum.
	if _, err := a.MemberRemove(testCtx(t), 3); err != nil {
		t.Fatalf("remove of the down voter: %v", err)
	}
	if memberByID(f.list, 3) != nil {
		t.Fatalf("member 3 still listed: %v", f.list)
	}
}

func TestMembershipAdminWithoutStrictCheckRemovesAnyway(t *testing.T) {
	f := threeVoters()
	f.connected[3] = time.Time{}
	a := newTestMembershipAdmin(f, membershipRules{})
	if _, err := a.MemberRemove(testCtx(t), 2); err != nil {
		t.Fatalf("remove without --strict-reconfig-check: %v", err)
	}
}

func TestMembershipAdminAddChecks(t *testing.T) {
	tests := []struct {
		name    string
		rules   membershipRules
		urls    []string
		learner bool
		want    error
		wantTyp raftpb.ConfChangeType
	}{
		{name: "voter", urls: []string{"http://d:2380"}, wantTyp: raftpb.ConfChangeAddNode},
		{name: "learner", urls: []string{"http://d:2380"}, learner: true, wantTyp: raftpb.ConfChangeAddLearnerNode},
		{name: "add as learner", rules: membershipRules{addAsLearner: true}, urls: []string{"http://d:2380"}, wantTyp: raftpb.ConfChangeAddLearnerNode},
		{name: "taken URL", urls: []string{"http://b:2380"}, want: errs.ErrPeerURLExists},
		{name: "bad URL", urls: []string{"d:2380"}, want: errs.ErrBadURLs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := threeVoters()
			a := newTestMembershipAdmin(f, tt.rules)
			m, _, err := a.MemberAdd(testCtx(t), tt.urls, tt.learner)
			if !errors.Is(err, tt.want) {
				t.Fatalf("MemberAdd: %v, want %v", err, tt.want)
			}
			if tt.want != nil {
				if len(f.changes) != 0 {
					t.Fatalf("a refused add was proposed")
				}
				return
			}
			if len(f.changes) != 1 || f.changes[0].GetType() != tt.wantTyp || f.changes[0].GetNodeId() != m.ID {
				t.Fatalf("proposed %v, want one %v of %x", f.changes, tt.wantTyp, m.ID)
			}
		})
	}
}

func TestMembershipAdminAddRefusesOneLearnerTooMany(t *testing.T) {
	f := threeVoters()
	f.list = append(f.list, &membership.Member{ID: 4, PeerURLs: []string{"http://d:2380"}, IsLearner: true})
	a := newTestMembershipAdmin(f, membershipRules{maxLearners: 1})
	if _, _, err := a.MemberAdd(testCtx(t), []string{"http://e:2380"}, true); !errors.Is(err, errs.ErrTooManyLearners) {
		t.Fatalf("second learner with --max-learners=1: %v, want ErrTooManyLearners", err)
	}
}

func TestMembershipAdminPromotesOnlyACaughtUpLearner(t *testing.T) {
	f := threeVoters()
	f.list = append(f.list, &membership.Member{ID: 4, PeerURLs: []string{"http://d:2380"}, IsLearner: true})
	f.commit, f.match[4] = 100, 50
	a := newTestMembershipAdmin(f, membershipRules{strict: true})
	if _, err := a.MemberPromote(testCtx(t), 4); !errors.Is(err, errs.ErrLearnerNotReady) {
		t.Fatalf("promote at 50%%: %v, want ErrLearnerNotReady", err)
	}
	if _, err := a.MemberPromote(testCtx(t), 2); !errors.Is(err, errs.ErrMemberNotLearner) {
		t.Fatalf("promote of a voter: %v, want ErrMemberNotLearner", err)
	}
	f.match[4] = 95
	if _, err := a.MemberPromote(testCtx(t), 4); err != nil {
		t.Fatalf("promote at 95%%: %v", err)
	}
	if m := memberByID(f.list, 4); m == nil || m.IsLearner {
		t.Fatalf("member 4 after promotion: %+v", m)
	}
}

func TestMembershipAdminFollowerForwardsPromoteToLeader(t *testing.T) {
	lf := threeVoters()
	lf.list = append(lf.list, &membership.Member{ID: 4, PeerURLs: []string{"http://d:2380"}, IsLearner: true})
	lf.commit, lf.match[4] = 100, 50
	leader := newTestMembershipAdmin(lf, membershipRules{})
	mux := http.NewServeMux()
	mux.HandleFunc(promotePath, leader.servePromote)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)

	ff := threeVoters()
	ff.self = 2
	ff.list[0].PeerURLs = []string{hs.URL} // the leader, member 1
	follower := newTestMembershipAdmin(ff, membershipRules{})
	// The leader's refusal comes back as the same error.
	if _, err := follower.MemberPromote(testCtx(t), 4); !errors.Is(err, errs.ErrLearnerNotReady) {
		t.Fatalf("forwarded promote of a lagging learner: %v, want ErrLearnerNotReady", err)
	}
	lf.match[4] = 100
	members, err := follower.MemberPromote(testCtx(t), 4)
	if err != nil {
		t.Fatalf("forwarded promote: %v", err)
	}
	if m := memberByID(members, 4); m == nil || m.IsLearner {
		t.Fatalf("member 4 in the leader's answer: %+v", m)
	}
	if len(ff.changes) != 0 || len(lf.changes) != 1 {
		t.Fatalf("the follower proposed %d changes and the leader %d; want 0 and 1", len(ff.changes), len(lf.changes))
	}
}

func TestClusterJoinerChecksInitialClusterAgainstTheCluster(t *testing.T) {
	remote := []*membership.Member{
		{ID: 1, PeerURLs: []string{"http://a:2380"}},
		{ID: 2, PeerURLs: []string{"http://b:2380"}},
	}
	tests := []struct {
		name    string
		initial map[string][]string
		own     []string
		wantID  uint64
		wantErr string
	}{
		{name: "match", initial: map[string][]string{"a": {"http://a:2380"}, "b": {"http://b:2380"}}, own: []string{"http://b:2380"}, wantID: 2},
		{name: "count", initial: map[string][]string{"b": {"http://b:2380"}}, own: []string{"http://b:2380"}, wantErr: "member count is unequal"},
		{name: "unmatched", initial: map[string][]string{"a": {"http://x:2380"}, "b": {"http://b:2380"}}, own: []string{"http://b:2380"}, wantErr: "unmatched member"},
		{name: "not added", initial: map[string][]string{"a": {"http://a:2380"}, "b": {"http://b:2380"}}, own: []string{"http://c:2380"}, wantErr: "add it first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := clusterJoiner{cfg: &Config{InitialCluster: tt.initial, PeerURLs: tt.own}, lg: zap.NewNop()}
			self, err := j.matchLocalMember(remote)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || self.ID != tt.wantID {
				t.Fatalf("self = %+v, %v; want member %d", self, err, tt.wantID)
			}
		})
	}
}
