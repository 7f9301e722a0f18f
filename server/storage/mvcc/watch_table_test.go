package mvcc

import (
	"testing"
	"unsafe"
)

// TestWatcherTable drives the table through stream-picked IDs, a client's
// IDs beyond and inside the slice's reach, deletes and re-use, against a
// map as the model.
func TestWatcherTable(t *testing.T) {
	type step struct {
		id  WatchID
		del bool
	}
	puts := func(ids ...WatchID) []step {
		var out []step
		for _, id := range ids {
			out = append(out, step{id: id})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"consecutive from 0", puts(0, 1, 2, 3)},
		{"client ID far ahead, then the slice grows past it", puts(20, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22)},
		{"huge and negative client IDs", puts(1<<40, 0, -7, 1)},
		{"delete and reuse", []step{{id: 0}, {id: 1}, {id: 2}, {id: 1, del: true}, {id: 1}, {id: 0, del: true}, {id: 2, del: true}, {id: 0}, {id: 2}}},
		{"delete of a client ID inside the slice's range", append(puts(20, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21), step{id: 20, del: true}, step{id: 20})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tab watcherTable
			model := map[WatchID]*watcher{}
			for i, st := range tc.steps {
				if st.del {
					tab.delete(st.id)
					delete(model, st.id)
				} else {
					w := &watcher{id: st.id}
					tab.put(st.id, w)
					model[st.id] = w
				}
				if tab.len() != len(model) {
					t.Fatalf("step %d: len %d, want %d", i, tab.len(), len(model))
				}
				for id, w := range model {
					if tab.get(id) != w {
						t.Fatalf("step %d: get(%d) = %v, want the watcher", i, id, tab.get(id))
					}
				}
				seen := map[WatchID]bool{}
				tab.each(func(w *watcher) { seen[w.id] = true })
				if len(seen) != len(model) {
					t.Fatalf("step %d: each visited %d watchers, want %d", i, len(seen), len(model))
				}
			}
			if tab.get(12345) != nil {
				t.Fatal("get of an unknown ID found a watcher")
			}
		})
	}
}

// TestWatcherSize: the watcher stays in the 80-byte size class; a member
// holds one per watch, hundreds of thousands of them.
func TestWatcherSize(t *testing.T) {
	if n := unsafe.Sizeof(watcher{}); n > 80 {
		t.Fatalf("watcher is %d bytes, want at most 80", n)
	}
}
