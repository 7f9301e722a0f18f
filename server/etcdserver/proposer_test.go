package etcdserver

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/quorum"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/idutil"
	"github.com/cairnkv/cairn/server/apply"
	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/raftnode"
)

// fakeProposeNode is a raft node that answers each proposal at once:
// with onPropose's value through the proposer (as the apply loop would),
// or by dropping it with drop.
type fakeProposeNode struct {
	committed uint64
	leader    uint64
	elected   time.Time
	voters    []uint64
	drop      error
	onPropose func(data []byte) any
	p         *proposer
}

func (n *fakeProposeNode) Committed() uint64          { return n.committed }
func (n *fakeProposeNode) Leader() uint64             { return n.leader }
func (n *fakeProposeNode) LeaderElectedAt() time.Time { return n.elected }
func (n *fakeProposeNode) Status() (raft.Status, error) {
	voters := quorum.MajorityConfig{}
	for _, id := range n.voters {
		voters[id] = struct{}{}
	}
	return raft.Status{Config: tracker.Config{Voters: quorum.JointConfig{voters, nil}}}, nil
}
func (n *fakeProposeNode) Propose(_ context.Context, _ time.Time, data []byte, onDrop func(error)) {
	if n.drop != nil {
		onDrop(n.drop)
		return
	}
	if id, ok := requestIDOf(data); ok {
		n.p.local.take(id) // applied: the apply loop takes it
		n.p.answer(id, n.onPropose(data))
	}
}
func (n *fakeProposeNode) ProposeConfChange(context.Context, raftpb.ConfChangeI) error { return nil }

// links are peer connections up since the given times (absent: down).
type links map[uint64]time.Time

func (l links) ActiveSince(id uint64) time.Time { return l[id] }

type noStamp struct{}

func (noStamp) stampAuth(context.Context, *pb.InternalRaftRequest) error { return nil }

func newTestProposer(node *fakeProposeNode, applied uint64, stop <-chan struct{}) *proposer {
	a := &atomic.Uint64{}
	a.Store(applied)
	c := &Config{ElectionTicks: 10, TickMs: 100, MaxRequestBytes: 64, Logger: zap.NewNop()}
	p := newProposer(1, c, noStamp{}, a, idutil.NewGenerator(1, time.Now()), stop)
	p.node, p.links, node.p = node, links{}, p
	return p
}

// propose refuses what it must before raft sees it, and otherwise returns
// the apply loop's result or raft's refusal as etcd's error.
func TestProposerPropose(t *testing.T) {
	applied := &apply.Result{Resp: &pb.PutResponse{}}
	stopped := make(chan struct{})
	close(stopped)
	tests := []struct {
		name      string
		committed uint64
		value     []byte
		drop      error
		stop      <-chan struct{}
		wantErr   error
	}{
		{"applied", 0, nil, nil, nil, nil},
		{"stopped", 0, nil, nil, stopped, errs.ErrStopped},
		{"apply backlog", maxApplyBacklog + 1, nil, nil, nil, errs.ErrTooManyRequests},
		{"too large", 0, make([]byte, 65), nil, nil, errs.ErrRequestTooLarge},
		{"raft stopped", 0, nil, raftnode.ErrStopped, nil, errs.ErrStopped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &fakeProposeNode{committed: tt.committed, drop: tt.drop, onPropose: func([]byte) any { return applied }}
			p := newTestProposer(node, 0, tt.stop)
			res, err := p.propose(context.Background(), &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k"), Value: tt.value}})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("propose error %v, want %v", err, tt.wantErr)
			}
			if err == nil && res != applied {
				t.Errorf("result %v, want the applied one", res)
			}
			if len(p.local.reqs) != 0 {
				t.Errorf("%d local requests left behind", len(p.local.reqs))
			}
		})
	}
}

// A proposal that raft never answers times out when the caller's context
// ends, and the explanation follows etcd's.
func TestProposerTimeoutError(t *testing.T) {
	start := time.Now()
	tests := []struct {
		name    string
		leader  uint64
		elected time.Time
		links   links
		voters  []uint64
		wantErr error
	}{
		{"no leader", 0, time.Time{}, nil, nil, errs.ErrTimeout},
		{"leader elected meanwhile", 2, start.Add(time.Second), nil, nil, errs.ErrTimeoutDueToLeaderFail},
		{"link to the leader down", 2, time.Time{}, links{}, nil, errs.ErrTimeoutDueToConnectionLost},
		{"link to the leader new", 2, time.Time{}, links{2: start.Add(time.Second)}, nil, errs.ErrTimeoutDueToConnectionLost},
		{"link to the leader up", 2, time.Time{}, links{2: start.Add(-time.Second)}, nil, errs.ErrTimeout},
		{"leading without a quorum", 1, time.Time{}, links{2: start.Add(-time.Second)}, []uint64{1, 2, 3, 4, 5}, errs.ErrTimeoutDueToConnectionLost},
		{"leading with a quorum", 1, time.Time{}, links{2: start.Add(-time.Second), 3: start.Add(-time.Second)}, []uint64{1, 2, 3, 4, 5}, errs.ErrTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &fakeProposeNode{leader: tt.leader, elected: tt.elected, voters: tt.voters}
			p := newTestProposer(node, 0, nil)
			p.links = tt.links
			if err := p.timeoutError(context.Background(), start); !errors.Is(err, tt.wantErr) {
				t.Errorf("timeoutError = %v, want %v", err, tt.wantErr)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := newTestProposer(&fakeProposeNode{}, 0, nil).timeoutError(ctx, start); !errors.Is(err, errs.ErrCanceled) {
		t.Errorf("canceled caller: %v, want ErrCanceled", err)
	}
}

// stopAll answers every waiting proposal with "stopped".
func TestProposerStopAll(t *testing.T) {
	node := &fakeProposeNode{onPropose: func([]byte) any { return nil }}
	p := newTestProposer(node, 0, nil)
	node.onPropose = func([]byte) any { p.stopAll(); return nil }
	if _, err := p.propose(context.Background(), &pb.InternalRaftRequest{Put: &pb.PutRequest{}}); !errors.Is(err, errs.ErrStopped) {
		t.Errorf("propose after stopAll: %v, want ErrStopped", err)
	}
}
