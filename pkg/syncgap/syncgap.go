// Package syncgap lets bulk writers time their syncs into the gaps between
// the syncs of a latency-critical writer on the same disk.
//
// A disk serves a sync after the writes queued ahead of it. When a member
// copies its db in the background (defragmentation) or frees a retired
// file, each of those bulk syncs that starts just before the WAL's next
// fdatasync makes every request waiting on that fdatasync wait for the bulk
// data too: on this project's test machine a WAL-like fdatasync every 2 ms
// beside a copy syncing 128 KiB at a time had a p99 of 1.0-1.1 ms against
// 0.6 ms alone; started right after one of the WAL's syncs ended, the
// copy's syncs left it at 0.56-0.58 ms. The WAL reports its syncs to a
// Gaps; bulk writers call Await before each of theirs.
package syncgap

import (
	"sync"
	"time"
)

const (
	// fresh: a sync that ended this recently leaves the disk to the bulk
	// writer for about as long as the WAL's own writes take to come back.
	fresh = 250 * time.Microsecond
	// quiet: with no sync for this long nothing latency-critical is
	// writing, and a bulk writer need not wait at all.
	quiet = 20 * time.Millisecond
)

// Gaps follows one writer's syncs. The zero value is not usable; a nil
// *Gaps is, and never makes anyone wait.
type Gaps struct {
	now   func() time.Time
	after func(time.Duration) <-chan time.Time

	mu      sync.Mutex
	syncing bool
	ended   time.Time     // when the last sync ended
	next    chan struct{} // closed when the sync in progress (or the next) ends
}

// New returns a Gaps on the system clock.
func New() *Gaps { return newGaps(time.Now, time.After) }

func newGaps(now func() time.Time, after func(time.Duration) <-chan time.Time) *Gaps {
	return &Gaps{now: now, after: after, next: make(chan struct{})}
}

// Begin: the writer starts a sync.
func (g *Gaps) Begin() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.syncing = true
	g.mu.Unlock()
}

// End: the writer's sync returned (successfully or not).
func (g *Gaps) End() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.syncing = false
	g.ended = g.now()
	close(g.next)
	g.next = make(chan struct{})
	g.mu.Unlock()
}

// Await returns when a bulk sync disturbs the writer least: at once if its
// last sync ended within the last moments or long ago (it is idle),
// otherwise when its next sync ends, or after max if none does by then.
func (g *Gaps) Await(max time.Duration) {
	if g == nil {
		return
	}
	g.mu.Lock()
	since := g.now().Sub(g.ended)
	goNow := !g.syncing && (since <= fresh || since >= quiet)
	next := g.next
	g.mu.Unlock()
	if goNow {
		return
	}
	select {
	case <-next:
	case <-g.after(max):
	}
}
