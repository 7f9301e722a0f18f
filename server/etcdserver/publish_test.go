package etcdserver

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/apply"
	"github.com/cairnkv/cairn/server/membership"
)

// fakePublishMember has a leader; its proposals either apply at once or
// hang until their context ends, as one answered by nobody does.
type fakePublishMember struct {
	mu       sync.Mutex
	hang     bool
	list     []*membership.Member
	proposed int
}

func (f *fakePublishMember) Leader() uint64                 { return 1 }
func (f *fakePublishMember) leaderChanged() <-chan struct{} { return make(chan struct{}) }
func (f *fakePublishMember) members() []*membership.Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.list
}
func (f *fakePublishMember) propose(ctx context.Context, r *pb.InternalRaftRequest) (*apply.Result, error) {
	f.mu.Lock()
	f.proposed++
	hang := f.hang
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &apply.Result{}, nil
}

func newTestPublisher(f *fakePublishMember, ready chan struct{}, snapshots *atomic.Uint64) *publisher {
	return &publisher{self: 2, attrs: &membershippb.Attributes{Name: "b", ClientUrls: []string{"http://b:2379"}},
		member: f, snapshots: snapshots, timeout: opTimeout, lg: zap.NewNop(), ready: ready, stop: make(chan struct{})}
}

func TestPublisherClosesReadyOnceApplied(t *testing.T) {
	ready := make(chan struct{})
	f := &fakePublishMember{}
	newTestPublisher(f, ready, new(atomic.Uint64)).run()
	select {
	case <-ready:
	default:
		t.Fatal("ready not closed after the attributes were applied")
	}
	if f.proposed != 1 {
		t.Fatalf("%d proposals, want 1", f.proposed)
	}
}

// A snapshot that already holds the attributes ends the wait for a
// proposal nobody will answer.
func TestPublisherCountsAttributesASnapshotBrought(t *testing.T) {
	ready := make(chan struct{})
	f := &fakePublishMember{hang: true}
	var snapshots atomic.Uint64
	p := newTestPublisher(f, ready, &snapshots)
	done := make(chan struct{})
	go func() { p.run(); close(done) }()
	waitFor(t, "the proposal", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.proposed == 1 })
	f.mu.Lock()
	f.list = []*membership.Member{{ID: 2, Name: "b", ClientURLs: []string{"http://b:2379"}}}
	f.mu.Unlock()
	snapshots.Add(1)
	<-done
	select {
	case <-ready:
	default:
		t.Fatal("ready not closed after a snapshot brought the attributes")
	}
}
