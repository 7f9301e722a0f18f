package wait

import (
	"context"
	"time"
)

// Sleep waits d, or less if ctx ends first; it reports whether d passed
// (false: ctx ended). A d of zero or less does not wait and reports whether
// ctx is still live, so a loop pacing itself by deadlines stops promptly.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Until is Sleep up to the time t.
func Until(ctx context.Context, t time.Time) bool { return Sleep(ctx, time.Until(t)) }

// Wake tells the goroutine that receives from c, a channel with room for
// one, that there is work, without waiting: a wake-up already pending
// covers this one too.
func Wake(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
