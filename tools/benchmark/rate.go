package main

import (
	"context"
	"sync"
	"time"

	"github.com/cairnkv/cairn/pkg/wait"
)

// clock is the time source of a limiter; tests replace it so that pacing
// can be checked without sleeping.
type clock interface {
	Now() time.Time
	// Sleep waits for d and reports false if ctx ended first.
	Sleep(ctx context.Context, d time.Duration) bool
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) bool { return wait.Sleep(ctx, d) }

// limiter caps the request rate shared by every client of a run (--rate).
// It hands out send slots one interval apart with a burst of one: a slot
// is never earlier than the previous slot plus the interval, nor earlier
// than the moment it is asked for. A stalled server therefore does not
// earn the clients a catch-up burst afterwards, so no window of one
// interval ever holds more than one request (the cap is a cap, not an
// average).
type limiter struct {
	clk      clock
	interval time.Duration

	mu   sync.Mutex
	next time.Time // earliest time of the next slot; zero before the first
}

// newLimiter returns a limiter for perSec requests per second, or nil (no
// limit) when perSec is 0. A nil *limiter is valid and never waits.
func newLimiter(perSec float64, clk clock) *limiter {
	if perSec <= 0 {
		return nil
	}
	return &limiter{clk: clk, interval: time.Duration(float64(time.Second) / perSec)}
}

// reserve claims the next slot and returns how long the caller must wait
// for it.
func (l *limiter) reserve() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clk.Now()
	slot := now
	if l.next.After(now) {
		slot = l.next
	}
	l.next = slot.Add(l.interval)
	return slot.Sub(now)
}

// wait blocks until the caller's slot; it reports false if ctx ended
// first. Callers wait before starting their clock, so pacing is never
// counted as latency.
func (l *limiter) wait(ctx context.Context) bool {
	if l == nil {
		return ctx.Err() == nil
	}
	return l.clk.Sleep(ctx, l.reserve())
}
