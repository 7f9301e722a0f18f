package compactor

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock moves only when the test advances it.
type fakeClock struct {
	mu      sync.Mutex
	changed *sync.Cond
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock() *fakeClock {
	fc := &fakeClock{now: time.Unix(1_000_000, 0)}
	fc.changed = sync.NewCond(&fc.mu)
	return fc
}

func (fc *fakeClock) Now() time.Time {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.now
}

func (fc *fakeClock) After(d time.Duration) <-chan time.Time {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	c := make(chan time.Time, 1)
	fc.waiters = append(fc.waiters, fakeWaiter{at: fc.now.Add(d), c: c})
	fc.changed.Broadcast()
	return c
}

// advance moves the clock by d and fires every timer that is due.
func (fc *fakeClock) advance(d time.Duration) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.now = fc.now.Add(d)
	pending := fc.waiters[:0]
	for _, w := range fc.waiters {
		if w.at.After(fc.now) {
			pending = append(pending, w)
			continue
		}
		w.c <- fc.now
	}
	fc.waiters = pending
}

// blockUntilWaiting returns once the loop waits on a timer: everything it
// did for the previous tick (sampling, compacting) is then finished.
func (fc *fakeClock) blockUntilWaiting() {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for len(fc.waiters) == 0 {
		fc.changed.Wait()
	}
}

// fakeStore is the member as the compactor sees it: a revision the test
// sets and a Compact that records its targets.
type fakeStore struct {
	rev       atomic.Int64
	mu        sync.Mutex
	compacted []int64
	err       error // returned by Compact while set
}

func (s *fakeStore) Rev() int64 { return s.rev.Load() }

func (s *fakeStore) Compact(_ context.Context, rev int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compacted = append(s.compacted, rev)
	return s.err
}

func (s *fakeStore) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// takeCompacted returns and forgets the revisions compacted to so far.
func (s *fakeStore) takeCompacted() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.compacted
	s.compacted = nil
	return out
}

// startCompactor runs a compactor on a fake clock and a store at revision
// rev; it is stopped when the test ends.
func startCompactor(t *testing.T, mode string, retention time.Duration, rev int64) (*Compactor, *fakeClock, *fakeStore) {
	t.Helper()
	fc, st := newFakeClock(), &fakeStore{}
	st.rev.Store(rev)
	c, err := New(Config{Mode: mode, Retention: retention, Rev: st.Rev, Compact: st.Compact, Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	c.Run()
	t.Cleanup(c.Stop)
	fc.blockUntilWaiting()
	return c, fc, st
}

// tick sets the store's revision, advances the clock by d and waits until
// the loop has handled the tick.
func tick(fc *fakeClock, st *fakeStore, rev int64, d time.Duration) {
	st.rev.Store(rev)
	fc.advance(d)
	fc.blockUntilWaiting()
}
