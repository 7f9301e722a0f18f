package mvcc

import (
	"testing"
	"unsafe"
)

// TestWatcherTableAdapts: get and each hand out the watchers themselves
// (the table behind them is tested in idtable).
func TestWatcherTableAdapts(t *testing.T) {
	var tab watcherTable
	a, b := &watcher{id: 0}, &watcher{id: 1 << 40}
	tab.Put(a.id, a)
	tab.Put(b.id, b)
	if tab.get(0) != a || tab.get(1<<40) != b || tab.get(5) != nil {
		t.Fatalf("get: %v %v %v", tab.get(0), tab.get(1<<40), tab.get(5))
	}
	seen := map[*watcher]bool{}
	tab.each(func(w *watcher) { seen[w] = true })
	if len(seen) != 2 || !seen[a] || !seen[b] {
		t.Fatalf("each visited %v", seen)
	}
}

// TestWatcherSize: the watcher stays in the 80-byte size class; a member
// holds one per watch, hundreds of thousands of them.
func TestWatcherSize(t *testing.T) {
	if n := unsafe.Sizeof(watcher{}); n > 80 {
		t.Fatalf("watcher is %d bytes, want at most 80", n)
	}
}
