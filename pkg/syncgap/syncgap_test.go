package syncgap

import (
	"testing"
	"time"
)

// fakeClock moves only when told; its timers fire only when fire is
// closed, so a test decides whether Await's bound is reached.
type fakeClock struct {
	t     time.Time
	fire  chan time.Time
	waits []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Unix(1000, 0), fire: make(chan time.Time)}
}

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) after(d time.Duration) <-chan time.Time {
	c.waits = append(c.waits, d)
	return c.fire
}

// awaitReturns runs Await and reports whether it returned within a
// generous real-time bound (it blocks forever on the fake timer otherwise).
func awaitReturns(g *Gaps) bool {
	done := make(chan struct{})
	go func() { g.Await(5 * time.Millisecond); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(200 * time.Millisecond):
		return false
	}
}

func TestAwaitGoesAtOnceRightAfterASyncOrWhenIdle(t *testing.T) {
	for _, c := range []struct {
		name    string
		sinceMs float64
		goNow   bool
	}{
		{"just ended", 0.1, true},
		{"ended a while ago: the next may be near", 1.5, false},
		{"idle writer", 25, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := newFakeClock()
			g := newGaps(clk.now, clk.after)
			g.Begin()
			g.End()
			clk.t = clk.t.Add(time.Duration(c.sinceMs * float64(time.Millisecond)))
			if got := awaitReturns(g); got != c.goNow {
				t.Fatalf("Await returned at once: %v, want %v", got, c.goNow)
			}
			if !c.goNow {
				g.End() // release the waiter
			}
		})
	}
}

func TestAwaitWaitsForTheSyncInProgress(t *testing.T) {
	clk := newFakeClock()
	g := newGaps(clk.now, clk.after)
	g.Begin()
	done := make(chan struct{})
	go func() { g.Await(5 * time.Millisecond); close(done) }()
	select {
	case <-done:
		t.Fatal("Await returned while the writer was syncing")
	case <-time.After(20 * time.Millisecond):
	}
	g.End()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Await did not return when the sync ended")
	}
}

func TestAwaitGivesUpAfterItsBound(t *testing.T) {
	clk := newFakeClock()
	g := newGaps(clk.now, clk.after)
	g.Begin() // a sync that never ends
	done := make(chan struct{})
	go func() { g.Await(3 * time.Millisecond); close(done) }()
	clk.fire <- clk.t // the bound passes (Await is receiving on fire)
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Await did not return after its bound")
	}
	if len(clk.waits) != 1 || clk.waits[0] != 3*time.Millisecond {
		t.Fatalf("timer waits %v, want one of 3ms", clk.waits)
	}
}

func TestNilGapsNeverWaits(t *testing.T) {
	var g *Gaps
	g.Begin()
	g.End()
	if !awaitReturns(g) {
		t.Fatal("a nil Gaps made Await wait")
	}
}
