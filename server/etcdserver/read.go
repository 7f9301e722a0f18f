package etcdserver

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

	"go.uber.org/zap"

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

// readBarrier batches linearizable reads: all reads that arrive while a
// round is in flight share the next round.
type readBarrier struct {
	mu    sync.RWMutex
	next  *readRound
	wakec chan struct{}
}

func (b *readBarrier) init() {
	b.next = newReadRound()
	b.wakec = make(chan struct{}, 1)
}

// linearizableReadNotify returns once the member has applied everything
// that was committed when the read arrived.
func (s *Server) linearizableReadNotify(ctx context.Context) error {
	s.reads.mu.RLock()
	round := s.reads.next
	s.reads.mu.RUnlock()
	select {
	case s.reads.wakec <- struct{}{}:
	default:
	}
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
func (s *Server) stopReads() {
	stopped := newReadRound()
	stopped.finish(errs.ErrStopped)
	s.reads.mu.Lock()
	pending := s.reads.next
	s.reads.next = stopped
	s.reads.mu.Unlock()
	pending.finish(errs.ErrStopped)
}

func (s *Server) readLoop() {
	defer s.stopReads()
	// One pair of timers serves every round (Reset discards a stale tick
	// since Go 1.23), instead of two new ones per round.
	t := readTimers{retry: time.NewTimer(readRetryInterval), deadline: time.NewTimer(s.cfg.requestTimeout())}
	defer t.stop()
	t.stop()
	for {
		leaderChanged := s.node.LeaderChanged()
		select {
		case <-s.reads.wakec:
		case <-leaderChanged:
			continue
		case <-s.stopc:
			return
		}
		s.reads.mu.Lock()
		round := s.reads.next
		s.reads.next = newReadRound()
		s.reads.mu.Unlock()

		index, err := s.confirmReadIndex(leaderChanged, t)
		if err != nil {
			metrics.ReadIndexFailed.Inc()
			round.finish(err)
			continue
		}
		select {
		case <-s.appliedWait.Wait(index):
			round.finish(nil)
		case <-s.stopc:
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
func (s *Server) confirmReadIndex(leaderChanged <-chan struct{}, t readTimers) (uint64, error) {
	id := s.reqIDs.Next()
	rctx := make([]byte, 8)
	binary.BigEndian.PutUint64(rctx, id)
	if err := s.requestReadIndex(rctx); err != nil {
		return 0, err
	}
	t.retry.Reset(readRetryInterval)
	t.deadline.Reset(s.cfg.requestTimeout())
	defer t.stop()
	for {
		select {
		case rs := <-s.node.ReadStates():
			if len(rs.RequestCtx) == 8 && binary.BigEndian.Uint64(rs.RequestCtx) == id {
				return rs.Index, nil
			}
			// An answer to an earlier, abandoned round: keep waiting for ours.
		case <-leaderChanged:
			return 0, errs.ErrLeaderChanged
		case <-t.retry.C:
			metrics.SlowReadIndexes.Inc()
			s.lg.Warn("waiting for ReadIndex response took too long, retrying", zap.Uint64("request-id", id))
			if err := s.requestReadIndex(rctx); err != nil {
				return 0, err
			}
			t.retry.Reset(readRetryInterval)
		case <-t.deadline.C:
			metrics.SlowReadIndexes.Inc()
			return 0, errs.ErrTimeout
		case <-s.stopc:
			return 0, errs.ErrStopped
		}
	}
}

func (s *Server) requestReadIndex(rctx []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout())
	defer cancel()
	if err := s.node.ReadIndex(ctx, rctx); err != nil {
		if ctx.Err() != nil {
			return errs.ErrTimeout
		}
		return err
	}
	return nil
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
