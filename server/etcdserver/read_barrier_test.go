package etcdserver

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/idutil"
	"github.com/cairnkv/cairn/pkg/wait"
	"github.com/cairnkv/cairn/server/errs"
)

// fakeReadIndexer answers every ReadIndex request with the index the test
// set, as a leader would once a quorum confirmed it.
type fakeReadIndexer struct {
	mu       sync.Mutex
	index    uint64
	requests int
	states   chan raft.ReadState
}

func (f *fakeReadIndexer) ReadIndex(_ context.Context, rctx []byte) error {
	f.mu.Lock()
	f.requests++
	idx := f.index
	f.mu.Unlock()
	f.states <- raft.ReadState{Index: idx, RequestCtx: append([]byte(nil), rctx...)}
	return nil
}
func (f *fakeReadIndexer) ReadStates() <-chan raft.ReadState { return f.states }
func (f *fakeReadIndexer) LeaderChanged() <-chan struct{}    { return make(chan struct{}) }

func startTestBarrier(t *testing.T, node readIndexer, applied appliedWaiter) *readBarrier {
	stop := make(chan struct{})
	b := &readBarrier{next: newReadRound(), wakec: make(chan struct{}, 1), node: node, applied: applied,
		ids: idutil.NewGenerator(1, time.Unix(0, 0)), timeout: opTimeout, lg: zap.NewNop(), stop: stop}
	done := make(chan struct{})
	go func() { b.run(); close(done) }()
	t.Cleanup(func() { close(stop); <-done })
	return b
}

func TestReadBarrierWaitsForTheConfirmedIndexToBeApplied(t *testing.T) {
	node := &fakeReadIndexer{index: 7, states: make(chan raft.ReadState, 1)}
	applied := wait.NewIndex(5)
	b := startTestBarrier(t, node, applied)
	res := make(chan error, 1)
	go func() { res <- b.wait(testCtx(t)) }()
	waitFor(t, "a ReadIndex request", func() bool { node.mu.Lock(); defer node.mu.Unlock(); return node.requests > 0 })
	select {
	case err := <-res:
		t.Fatalf("the read returned (%v) before index 7 was applied", err)
	case <-time.After(20 * time.Millisecond):
	}
	applied.Trigger(7)
	if err := <-res; err != nil {
		t.Fatalf("read after index 7 applied: %v", err)
	}
}

// stuckReadIndexer never answers.
type stuckReadIndexer struct{}

func (stuckReadIndexer) ReadIndex(context.Context, []byte) error { return nil }
func (stuckReadIndexer) ReadStates() <-chan raft.ReadState       { return nil }
func (stuckReadIndexer) LeaderChanged() <-chan struct{}          { return make(chan struct{}) }

func TestReadBarrierStopFailsPendingAndLaterReads(t *testing.T) {
	stop := make(chan struct{})
	b := &readBarrier{next: newReadRound(), wakec: make(chan struct{}, 1), node: stuckReadIndexer{}, applied: wait.NewIndex(0),
		ids: idutil.NewGenerator(1, time.Unix(0, 0)), timeout: opTimeout, lg: zap.NewNop(), stop: stop}
	done := make(chan struct{})
	go func() { b.run(); close(done) }()
	res := make(chan error, 1)
	go func() { res <- b.wait(testCtx(t)) }()
	close(stop)
	<-done
	if err := <-res; !errors.Is(err, errs.ErrStopped) {
		t.Fatalf("pending read at stop: %v, want ErrStopped", err)
	}
	if err := b.wait(testCtx(t)); !errors.Is(err, errs.ErrStopped) {
		t.Fatalf("read after stop: %v, want ErrStopped", err)
	}
}
