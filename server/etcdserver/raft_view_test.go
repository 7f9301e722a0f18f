package etcdserver

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/errs"
)

// fakeViewedNode is a raft node with a fixed leader and commit index.
type fakeViewedNode struct {
	leader, commit uint64
	campaigns      int
	lastTick       time.Time
}

func (n *fakeViewedNode) LastTick() time.Time { return n.lastTick }

func (n *fakeViewedNode) Leader() uint64                 { return n.leader }
func (n *fakeViewedNode) LeaderChanged() <-chan struct{} { return nil }
func (n *fakeViewedNode) Status() (raft.Status, error) {
	commit := n.commit
	st := raft.Status{}
	st.HardState = &raftpb.HardState{Commit: &commit}
	return st, nil
}
func (n *fakeViewedNode) Campaign(context.Context) error {
	n.campaigns++
	return nil
}

// appliedUpTo is an applied-index wait that has applied everything up to
// its value.
type appliedUpTo uint64

func (a appliedUpTo) Wait(index uint64) <-chan struct{} {
	c := make(chan struct{})
	if index <= uint64(a) {
		close(c)
	}
	return c
}

func TestRaftViewSetConfStateLearner(t *testing.T) {
	v := &raftView{self: 3}
	v.setConfState(&raftpb.ConfState{Voters: []uint64{1, 2}, Learners: []uint64{3}})
	if !v.isLearner() {
		t.Error("listed as learner, not a learner")
	}
	v.setConfState(&raftpb.ConfState{Voters: []uint64{1, 2, 3}})
	if v.isLearner() {
		t.Error("promoted, still a learner")
	}
}

func TestRaftViewIsSingleVoter(t *testing.T) {
	tests := []struct {
		name           string
		confState      *raftpb.ConfState
		forcedOnWAL    bool
		initialMembers int
		want           bool
	}{
		{"forced new cluster", &raftpb.ConfState{Voters: []uint64{1, 2}}, true, 3, true},
		{"alone in its configuration", &raftpb.ConfState{Voters: []uint64{1}}, false, 3, true},
		{"another voter", &raftpb.ConfState{Voters: []uint64{2}}, false, 1, false},
		{"several voters", &raftpb.ConfState{Voters: []uint64{1, 2}}, false, 1, false},
		{"no configuration, one initial member", nil, false, 1, true},
		{"no configuration, three initial members", nil, false, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &raftView{self: 1, confState: tt.confState}
			if got := v.isSingleVoter(tt.forcedOnWAL, tt.initialMembers); got != tt.want {
				t.Errorf("isSingleVoter = %v, want %v", got, tt.want)
			}
		})
	}
}

// waitCommittedApplied returns once the commit index is applied, and
// campaignWhenApplied campaigns only then.
func TestRaftViewWaitsForTheCommitIndex(t *testing.T) {
	stop := make(chan struct{})
	node := &fakeViewedNode{leader: 1, commit: 5}
	v := &raftView{self: 1, node: node, applied: appliedUpTo(5), stop: stop, lg: zap.NewNop()}
	if err := v.waitCommittedApplied(context.Background()); err != nil {
		t.Fatalf("applied up to the commit index: %v", err)
	}
	if v.campaignWhenApplied(); node.campaigns != 1 {
		t.Errorf("%d campaigns, want 1", node.campaigns)
	}
	if !v.leads() {
		t.Error("leader 1 is this member, leads() false")
	}
	v.applied = appliedUpTo(4)
	close(stop)
	if err := v.waitCommittedApplied(context.Background()); !errors.Is(err, errs.ErrStopped) {
		t.Errorf("behind and stopped: %v, want ErrStopped", err)
	}
	if v.campaignWhenApplied(); node.campaigns != 1 {
		t.Errorf("stopped before applying: %d campaigns, want 1", node.campaigns)
	}
}

// loopActive: raft's loop counts as active for three ticks after its last.
func TestRaftViewLoopActive(t *testing.T) {
	start := time.Unix(1000, 0)
	tests := []struct {
		since time.Duration
		want  bool
	}{{0, true}, {299 * time.Millisecond, true}, {300 * time.Millisecond, false}, {time.Minute, false}}
	for _, tt := range tests {
		v := &raftView{node: &fakeViewedNode{lastTick: start}, tick: 100 * time.Millisecond,
			now: func() time.Time { return start.Add(tt.since) }}
		if got := v.loopActive(); got != tt.want {
			t.Errorf("%v after the last tick: active %v, want %v", tt.since, got, tt.want)
		}
	}
}
