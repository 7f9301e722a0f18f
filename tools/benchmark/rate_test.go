package main

import (
	"context"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock whose time moves only when a caller sleeps or the
// test advances it, so pacing is checked without real waiting.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	if d > 0 {
		c.now = c.now.Add(d)
	}
	return ctx.Err() == nil
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestLimiterPacing(t *testing.T) {
	const interval = 10 * time.Millisecond // 100 requests/s
	tests := []struct {
		name string
		// idle[i] is how long the caller is busy before asking for slot i.
		idle      []time.Duration
		wantWaits []time.Duration
	}{
		{
			name:      "back-to-back requests are one interval apart",
			idle:      []time.Duration{0, 0, 0, 0},
			wantWaits: []time.Duration{0, interval, interval, interval},
		},
		{
			name:      "a slow caller is not held back",
			idle:      []time.Duration{0, 15 * time.Millisecond, 25 * time.Millisecond},
			wantWaits: []time.Duration{0, 0, 0},
		},
		{
			name:      "part of an interval already spent is not waited again",
			idle:      []time.Duration{0, 4 * time.Millisecond},
			wantWaits: []time.Duration{0, 6 * time.Millisecond},
		},
		{
			name:      "a long stall earns no catch-up burst",
			idle:      []time.Duration{0, time.Second, 0, 0},
			wantWaits: []time.Duration{0, 0, interval, interval},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &fakeClock{now: time.Unix(1000, 0)}
			lim := newLimiter(100, clk)
			for _, idle := range tt.idle {
				clk.advance(idle)
				if !lim.wait(context.Background()) {
					t.Fatal("wait reported a cancelled context")
				}
			}
			if len(clk.sleeps) != len(tt.wantWaits) {
				t.Fatalf("sleeps = %v, want %v", clk.sleeps, tt.wantWaits)
			}
			for i := range tt.wantWaits {
				if clk.sleeps[i] != tt.wantWaits[i] {
					t.Errorf("wait %d = %v, want %v (all: %v)", i, clk.sleeps[i], tt.wantWaits[i], clk.sleeps)
				}
			}
		})
	}
}

func TestLimiterSharedByClients(t *testing.T) {
	// 8 clients claiming 80 slots at one instant get 80 distinct slots one
	// interval apart: the cap holds across clients, not per client.
	clk := &fakeClock{now: time.Unix(0, 0)}
	lim := newLimiter(1000, clk)
	var wg sync.WaitGroup
	var mu sync.Mutex
	waits := map[time.Duration]bool{}
	for range 8 {
		wg.Go(func() {
			for range 10 {
				d := lim.reserve()
				mu.Lock()
				waits[d] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i := range 80 {
		if d := time.Duration(i) * time.Millisecond; !waits[d] {
			t.Errorf("no client got the slot %v from now", d)
		}
	}
}

func TestNoLimit(t *testing.T) {
	if lim := newLimiter(0, &fakeClock{}); lim != nil {
		t.Fatalf("rate 0 gave a limiter %+v, want none", lim)
	}
	var lim *limiter
	if !lim.wait(context.Background()) {
		t.Error("a nil limiter refused to go on")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if lim.wait(ctx) || newLimiter(1, &fakeClock{}).wait(ctx) {
		t.Error("wait went on after the context ended")
	}
}

func TestRunPoolHonoursRate(t *testing.T) {
	clk := &fakeClock{now: time.Unix(0, 0)}
	lim := newLimiter(50, clk)
	var mu sync.Mutex
	seen := map[int64]bool{}
	// One client: with several, the fake clock's sleeps would overlap
	// and add up, which real sleeps do not.
	runPool(context.Background(), 1, 20, lim, func(_ int, seq int64) {
		mu.Lock()
		defer mu.Unlock()
		seen[seq] = true
	})
	if len(seen) != 20 {
		t.Errorf("ran %d distinct requests, want 20", len(seen))
	}
	// 20 requests at 50/s: the last may not start before 19 intervals.
	if got, want := clk.Now().Sub(time.Unix(0, 0)), 19*20*time.Millisecond; got != want {
		t.Errorf("fake time after the run = %v, want %v", got, want)
	}
}
