package lease

import "time"

// Clock is the lessor's source of time. Only the primary's expiry and
// checkpoint decisions read it; nothing persisted depends on it.
type Clock interface {
	Now() time.Time
	// NewTicker returns a ticker firing every d.
	NewTicker(d time.Duration) Ticker
}

// Ticker delivers ticks until stopped.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// RealClock is the wall clock (time.Now carries a monotonic reading, so
// expiries are immune to wall-clock jumps).
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// NewTicker wraps time.NewTicker.
func (RealClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }
