package v3rpc

import (
	"testing"

	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// TestOptionsTable drives the table through store-picked IDs, client IDs
// beyond and inside the slice's reach, deletes and re-use, against a map.
func TestOptionsTable(t *testing.T) {
	type step struct {
		id  mvcc.WatchID
		del bool
	}
	puts := func(ids ...mvcc.WatchID) []step {
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
		{"client ID far ahead, then the slice grows past it", puts(20, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21)},
		{"huge and negative client IDs", puts(1<<40, 0, -7, 1)},
		{"delete and reuse", []step{{id: 0}, {id: 1}, {id: 1, del: true}, {id: 1}, {id: 0, del: true}, {id: 0}}},
		{"delete of a client ID inside the slice's range", append(puts(20, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21), step{id: 20, del: true}, step{id: 20})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tab optionsTable
			model := map[mvcc.WatchID]bool{} // id -> its prevKV, which tells the puts apart
			for i, st := range tc.steps {
				if st.del {
					tab.delete(st.id)
					delete(model, st.id)
				} else {
					tab.put(st.id, watchOptions{prevKV: st.id%2 == 0})
					model[st.id] = st.id%2 == 0
				}
				for id, prevKV := range model {
					if o := tab.get(id); o == nil || o.prevKV != prevKV {
						t.Fatalf("step %d: get(%d) = %+v, want prevKV %v", i, id, o, prevKV)
					}
				}
				n := 0
				tab.each(func(id mvcc.WatchID, o *watchOptions) {
					n++
					if _, ok := model[id]; !ok {
						t.Fatalf("step %d: each visited %d, which is not there", i, id)
					}
				})
				if n != len(model) {
					t.Fatalf("step %d: each visited %d, want %d", i, n, len(model))
				}
			}
			if tab.get(12345) != nil {
				t.Fatal("get of an unknown ID found options")
			}
		})
	}
}
