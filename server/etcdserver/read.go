package etcdserver

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/idutil"
	"github.com/cairnkv/cairn/pkg/wait"
	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/metrics"
)

// readRetryInterval is how long the read loop waits for a ReadIndex answer
// before asking raft again (a lost heartbeat round must not stall reads).
const readRetryInterval = 500 * time.Millisecond

// readRound is the fate shared by every read that joined one ReadIndex round.
type readRound struct {
	done chan struct{}
	err  error
}

func newReadRound() *readRound { return &readRound{done: make(chan struct{})} }

func (r *readRound) finish(err error) {
	r.err = err
	close(r.done)
}

// readIndexer is the raft node's part in the read barrier
// (*raftnode.Node).
type readIndexer interface {
	ReadIndex(ctx context.Context, rctx []byte) error
	ReadStates() <-chan raft.ReadState
	LeaderChanged() <-chan struct{}
}

// appliedWaiter wakes a waiter once the member has applied an index
// (*wait.Index).
type appliedWaiter interface {
	Wait(index uint64) <-chan struct{}
}

// readBarrier batches linearizable reads: all reads that arrive while a
// round is in flight share the next round. Its loop (run) asks raft for a
// read index per round and waits until the member has applied it.
type readBarrier struct {
	mu    sync.RWMutex
	next  *readRound
	wakec chan struct{}

	node    readIndexer
	applied appliedWaiter
	ids     *idutil.Generator // ReadIndex request contexts
	timeout time.Duration     // gives up a round (Config.requestTimeout)
	lg      *zap.Logger
	stop    <-chan struct{}
}

func newReadBarrier(c *Config, node readIndexer, applied appliedWaiter, ids *idutil.Generator, stop <-chan struct{}) *readBarrier {
	return &readBarrier{next: newReadRound(), wakec: make(chan struct{}, 1),
		node: node, applied: applied, ids: ids, timeout: c.requestTimeout(), lg: c.Logger, stop: stop}
}

// linearizableReadNotify returns once the member has applied everything
// that was committed when the read arrived.
func (s *Server) linearizableReadNotify(ctx context.Context) error { return s.reads.wait(ctx) }

// wait returns once the member has applied everything that was committed
// when it was called.
func (b *readBarrier) wait(ctx context.Context) error {
	b.mu.RLock()
	round := b.next
	b.mu.RUnlock()
	wait.Wake(b.wakec)
	// No case on stopc (every reader would contend on it): the read loop
	// finishes the pending round with ErrStopped when it exits.
	select {
	case <-round.done:
		return round.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stopReads fails the pending round and every later one with ErrStopped.
func (b *readBarrier) stopReads() {
	stopped := newReadRound()
	stopped.finish(errs.ErrStopped)
	b.mu.Lock()
	pending := b.next
	b.next = stopped
	b.mu.Unlock()
	pending.finish(errs.ErrStopped)
}

// run serves rounds until stop.
func (b *readBarrier) run() {
	defer b.stopReads()
	// One pair of timers serves every round (Reset discards a stale tick
	// since Go 1.23), instead of two new ones per round.
	t := readTimers{retry: time.NewTimer(readRetryInterval), deadline: time.NewTimer(b.timeout)}
	defer t.stop()
	t.stop()
	for {
		leaderChanged := b.node.LeaderChanged()
		select {
		case <-b.wakec:
		case <-leaderChanged:
			continue
		case <-b.stop:
			return
		}
		b.mu.Lock()
		round := b.next
		b.next = newReadRound()
		b.mu.Unlock()

		index, err := b.confirmReadIndex(leaderChanged, t)
		if err != nil {
			metrics.ReadIndexFailed.Inc()
			round.finish(err)
			continue
		}
		select {
		case <-b.applied.Wait(index):
			round.finish(nil)
		case <-b.stop:
			round.finish(errs.ErrStopped)
			return
		}
	}
}

// readTimers bound a ReadIndex round: retry asks raft again, deadline
// gives up.
type readTimers struct {
	retry, deadline *time.Timer
}

func (t readTimers) stop() {
	t.retry.Stop()
	t.deadline.Stop()
}

// confirmReadIndex runs one ReadIndex round and returns the commit index the
// leader confirmed. It leaves t stopped.
func (b *readBarrier) confirmReadIndex(leaderChanged <-chan struct{}, t readTimers) (uint64, error) {
	id := b.ids.Next()
	rctx := make([]byte, 8)
	binary.BigEndian.PutUint64(rctx, id)
	if err := b.requestReadIndex(rctx); err != nil {
		return 0, err
	}
	t.retry.Reset(readRetryInterval)
	t.deadline.Reset(b.timeout)
	defer t.stop()
	for {
		select {
		case rs := <-b.node.ReadStates():
			if len(rs.RequestCtx) == 8 && binary.BigEndian.Uint64(rs.RequestCtx) == id {
				return rs.Index, nil
			}
			// An answer to an earlier, abandoned round: keep waiting for ours.
		case <-leaderChanged:
			return 0, errs.ErrLeaderChanged
		case <-t.retry.C:
			metrics.SlowReadIndexes.Inc()
			b.lg.Warn("waiting for ReadIndex response took too long, retrying", zap.Uint64("request-id", id))
			if err := b.requestReadIndex(rctx); err != nil {
				return 0, err
			}
			t.retry.Reset(readRetryInterval)
		case <-t.deadline.C:
			metrics.SlowReadIndexes.Inc()
			return 0, errs.ErrTimeout
		case <-b.stop:
			return 0, errs.ErrStopped
		}
	}
}

func (b *readBarrier) requestReadIndex(rctx []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	if err := b.node.ReadIndex(ctx, rctx); err != nil {
		if ctx.Err() != nil {
			return errs.ErrTimeout
		}
		return err
	}
	return nil
}
