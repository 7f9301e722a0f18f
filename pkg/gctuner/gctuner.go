// Package gctuner keeps Go's garbage collector from running too often
// while the live heap is small.
//
// With GOGC=100 the collector starts a cycle once the heap has grown by
// as much as survived the last one. A member with a few MB of live data
// and a high request rate (every gRPC request allocates a few KB) then
// collects dozens of times a second, and much of each cycle's cost does
// not shrink with the heap (stacks, globals, the mark workers' time
// slices on a busy machine). The tuner gives the heap a minimum headroom
// instead: after each cycle it sets GOGC so that the next cycle starts at
// live + headroom, never below GOGC=100 (a large heap is collected exactly
// as before). A user's GOGC in the environment wins: the tuner then stays
// off. GOMEMLIMIT applies either way.
package gctuner

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultHeadroom is the headroom cairn runs with. Under a read load on
// a 3-member cluster a member keeps about 3 MB live: it now collects at
// 12 MB instead of 7 (about half as often), still below the 18 MB goal
// etcd runs at under the same load.
const DefaultHeadroom = 12 << 20

// runtimeHeapMinimum is the Go runtime's smallest heap goal at GOGC=100;
// it scales with GOGC, so a high GOGC on a tiny heap would let the heap
// grow far past live + headroom before the first cycles.
const runtimeHeapMinimum = 4 << 20

// percentFor is the GOGC that makes the next cycle start at live +
// headroom: at least 100, and at most what keeps the runtime's minimum
// heap goal within the headroom (so a tiny or unknown live heap, as at
// start-up, never raises the goal past the headroom).
func percentFor(live, headroom uint64) int {
	limit := headroom * 100 / runtimeHeapMinimum
	p := limit
	if live > 0 {
		p = min(headroom*100/live, limit)
	}
	return int(max(100, p))
}

// tuner holds what it needs to read the heap and set GOGC, so tests can
// drive it without the runtime's collector.
type tuner struct {
	headroom   uint64
	liveHeap   func() uint64
	setPercent func(int) int

	mu       sync.Mutex
	stopped  bool
	original int // GOGC before the tuner started
	current  int
}

// Start tunes GOGC for a heap headroom of headroom bytes until the
// returned stop is called, which restores GOGC. It does nothing (stop is
// a no-op) if GOGC is set in the environment or headroom is 0.
func Start(headroom uint64) (stop func()) {
	if headroom == 0 || os.Getenv("GOGC") != "" {
		return func() {}
	}
	t := &tuner{headroom: headroom, liveHeap: readLiveHeap, setPercent: debug.SetGCPercent}
	t.start()
	return t.stop
}

func (t *tuner) start() {
	t.current = percentFor(t.liveHeap(), t.headroom)
	t.original = t.setPercent(t.current)
	t.arm()
}

// arm asks to be called after the next collection: a cleanup of an
// object nothing refers to runs once a cycle has found it unreachable.
// The object holds a pointer so that it is not packed into a tiny block,
// whose cleanup could wait for its neighbours.
func (t *tuner) arm() {
	s := &sentinel{}
	runtime.AddCleanup(s, (*tuner).afterCycle, t)
}

type sentinel struct {
	_ *int
	_ [8]byte
}

// afterCycle runs on the runtime's cleanup goroutine after each cycle.
func (t *tuner) afterCycle() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	if p := percentFor(t.liveHeap(), t.headroom); p != t.current {
		t.setPercent(p)
		t.current = p
	}
	t.arm()
}

func (t *tuner) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		t.setPercent(t.original)
	}
}

// readLiveHeap is the heap the last cycle marked live.
func readLiveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
