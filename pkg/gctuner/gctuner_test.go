package gctuner

import (
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestPercentFor(t *testing.T) {
	const mb = 1 << 20
	tests := []struct {
		live, headroom uint64
		want           int
	}{
		{3 * mb, 12 * mb, 300},   // the runtime minimum: 4 MB x 3 = 12 MB goal
		{6 * mb, 12 * mb, 200},   // next cycle at 18 MB
		{12 * mb, 12 * mb, 100},  // headroom equals GOGC=100's
		{300 * mb, 12 * mb, 100}, // a large heap keeps GOGC=100
		{1024, 12 * mb, 300},     // start-up: bounded by the minimum
		{0, 12 * mb, 300},        // no cycle yet
		{5 * mb, 32 * mb, 640},   // 32/5
		{7 * mb, 32 * mb, 457},   // rounded down, never past the headroom
		{1 * mb, 2 * mb, 100},    // a headroom below the minimum: GOGC=100
	}
	for _, tt := range tests {
		if got := percentFor(tt.live, tt.headroom); got != tt.want {
			t.Errorf("percentFor(%d, %d) = %d, want %d", tt.live, tt.headroom, got, tt.want)
		}
	}
}

// fakeRuntime records the GOGC values the tuner sets.
type fakeRuntime struct {
	mu   sync.Mutex
	live uint64
	set  []int
	gogc int
}

func (f *fakeRuntime) liveHeap() uint64 { f.mu.Lock(); defer f.mu.Unlock(); return f.live }

func (f *fakeRuntime) setPercent(p int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.gogc
	f.gogc = p
	f.set = append(f.set, p)
	return old
}

func (f *fakeRuntime) setLive(n uint64) { f.mu.Lock(); f.live = n; f.mu.Unlock() }

func (f *fakeRuntime) calls() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.set...)
}

func TestTunerFollowsTheLiveHeapAndRestoresGOGC(t *testing.T) {
	f := &fakeRuntime{live: 8 << 20, gogc: 150}
	tu := &tuner{headroom: 16 << 20, liveHeap: f.liveHeap, setPercent: f.setPercent}
	tu.start()
	f.setLive(8 << 20)
	tu.afterCycle() // unchanged: not set again
	f.setLive(5 << 20)
	tu.afterCycle()
	f.setLive(64 << 20)
	tu.afterCycle()
	tu.stop()
	f.setLive(1 << 20)
	tu.afterCycle() // stopped: nothing
	want := []int{200, 320, 100, 150}
	if got := f.calls(); !slices.Equal(got, want) {
		t.Fatalf("GOGC set to %v, want %v (the last restores the original 150)", got, want)
	}
}

// TestTunerRunsAfterEachCollection uses the real collector, with fakes
// for the heap reading (which reports each time the tuner looks) and the
// GOGC setter, so the test's own GOGC stays put. The tuner re-arms itself
// on the cleanup goroutine after it looked, so a collection the test
// starts right after a look may come too early to see the new sentinel:
// the test collects until the tuner looks again, three times over.
func TestTunerRunsAfterEachCollection(t *testing.T) {
	looked := make(chan struct{}, 100)
	tu := &tuner{headroom: 8 << 20,
		liveHeap:   func() uint64 { looked <- struct{}{}; return readLiveHeap() },
		setPercent: func(int) int { return 100 },
	}
	tu.start()
	<-looked // start's own look
	defer tu.stop()
	deadline := time.After(30 * time.Second)
	for i := range 3 {
		for seen := false; !seen; {
			runtime.GC()
			select {
			case <-looked:
				seen = true
			case <-time.After(10 * time.Millisecond):
			case <-deadline:
				t.Fatalf("the tuner looked %d times after collections, want 3", i)
			}
		}
	}
}

func TestStartLeavesAUsersGOGCAlone(t *testing.T) {
	t.Setenv("GOGC", "100")
	before := debug.SetGCPercent(100)
	debug.SetGCPercent(before)
	stop := Start(DefaultHeadroom)
	defer stop()
	runtime.GC()
	after := debug.SetGCPercent(before)
	if after != before {
		t.Fatalf("GOGC %d after Start with GOGC set, want %d", after, before)
	}
}
