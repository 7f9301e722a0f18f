package etcdserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/membership"
)

// fakeLearnerMember is a member as the steward sees it, without raft.
type fakeLearnerMember struct {
	leader    bool
	list      []*membership.Member
	connected map[uint64]time.Time
	promoted  []uint64
	removed   []uint64
}

func (f *fakeLearnerMember) leads() bool                        { return f.leader }
func (f *fakeLearnerMember) IsLearner() bool                    { return false }
func (f *fakeLearnerMember) members() []*membership.Member      { return f.list }
func (f *fakeLearnerMember) connectedSince(id uint64) time.Time { return f.connected[id] }
func (f *fakeLearnerMember) learnerReady(uint64) error          { return nil }
func (f *fakeLearnerMember) Alarms() []*pb.AlarmMember          { return nil }
func (f *fakeLearnerMember) MemberPromote(_ context.Context, id uint64) ([]*membership.Member, error) {
	f.promoted = append(f.promoted, id)
	return f.list, nil
}
func (f *fakeLearnerMember) proposeConfChange(_ context.Context, _ raftpb.ConfChangeType, m *membership.Member) ([]*membership.Member, error) {
	f.removed = append(f.removed, m.ID)
	return f.list, nil
}

// learnerPeer answers the learner settings endpoint with st.
func learnerPeer(t *testing.T, st LearnerSettings) string {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestStewardPromotesOnlyAfterTheDurationAndWithHealthyVoters(t *testing.T) {
	long := time.Now().Add(-time.Hour)
	learnerURL := learnerPeer(t, LearnerSettings{AutoPromote: true})
	f := &fakeLearnerMember{
		leader: true,
		list: []*membership.Member{
			{ID: 1}, {ID: 2}, {ID: 3},
			{ID: 4, IsLearner: true, PeerURLs: []string{learnerURL}},
		},
		connected: map[uint64]time.Time{2: long, 3: long, 4: long},
	}
	l := &learnerSteward{self: 1, member: f, peers: http.DefaultClient, lg: zap.NewNop(),
		timing: learnerTiming{promoteAfter: 10 * time.Second, autoPromote: true}}
	ctx := testCtx(t)
	t0 := time.Now()
	tr := newPromoteTracker(l.timing.promoteAfter)
	if id := l.autoPromoteTick(ctx, tr, t0); id != 0 {
		t.Fatalf("promoted %x at the first sight", id)
	}
	f.connected[3] = time.Time{} // a voter goes away
	if id := l.autoPromoteTick(ctx, tr, t0.Add(11*time.Second)); id != 0 {
		t.Fatalf("promoted %x with a voter down", id)
	}
	f.connected[3] = long
	if id := l.autoPromoteTick(ctx, tr, t0.Add(12*time.Second)); id != 4 || len(f.promoted) != 1 {
		t.Fatalf("not promoted after the duration: id %x, promotions %v", id, f.promoted)
	}
	f.leader = false
	if id := l.autoPromoteTick(ctx, tr, t0.Add(30*time.Second)); id != 0 {
		t.Fatalf("a follower promoted %x", id)
	}
}

func TestStewardFailsOverToAStandbyWithoutLosingQuorum(t *testing.T) {
	long := time.Now().Add(-time.Hour)
	standbyURL := learnerPeer(t, LearnerSettings{})
	f := &fakeLearnerMember{
		leader: true,
		list: []*membership.Member{
			{ID: 1}, {ID: 2}, {ID: 3},
			{ID: 4, IsLearner: true, PeerURLs: []string{standbyURL}},
		},
		connected: map[uint64]time.Time{2: long, 4: long}, // voter 3 is gone
	}
	l := &learnerSteward{self: 1, member: f, peers: http.DefaultClient, lg: zap.NewNop(),
		timing: learnerTiming{failoverAfter: time.Minute}}
	down := newPromoteTracker(l.timing.failoverAfter)
	t0 := time.Now()
	if l.standbyFailoverTick(testCtx(t), down, t0) {
		t.Fatal("failed over at the first sight of the unreachable voter")
	}
	if !l.standbyFailoverTick(testCtx(t), down, t0.Add(2*time.Minute)) {
		t.Fatal("no failover after the duration")
	}
	if len(f.promoted) != 1 || f.promoted[0] != 4 || len(f.removed) != 1 || f.removed[0] != 3 {
		t.Fatalf("promoted %v, removed %v; want the standby 4 promoted and voter 3 removed", f.promoted, f.removed)
	}
}
