package idtable

import "testing"

// TestTable drives a table through IDs handed out from 0, IDs beyond and
// inside the slice's reach, negative ones, deletes and re-use, against a
// map as the model.
func TestTable(t *testing.T) {
	type step struct {
		id  int64
		del bool
	}
	puts := func(ids ...int64) []step {
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
		{"an ID far ahead, then the slice grows past it", puts(20, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22)},
		{"huge and negative IDs", puts(1<<40, 0, -7, 1, MaxDense)},
		{"delete and reuse", []step{{id: 0}, {id: 1}, {id: 2}, {id: 1, del: true}, {id: 1}, {id: 0, del: true}, {id: 2, del: true}, {id: 0}, {id: 2}}},
		{"delete of a map ID inside the slice's range", append(puts(20, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21), step{id: 20, del: true}, step{id: 20})},
		{"delete of an absent ID", []step{{id: 0}, {id: 5, del: true}, {id: 1 << 40, del: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tab Table[int64, *int64]
			model := map[int64]*int64{}
			for i, st := range tc.steps {
				if st.del {
					tab.Delete(st.id)
					delete(model, st.id)
				} else {
					v := new(int64)
					*v = st.id
					tab.Put(st.id, v)
					model[st.id] = v
				}
				if tab.Len() != len(model) {
					t.Fatalf("step %d: Len %d, want %d", i, tab.Len(), len(model))
				}
				for id, v := range model {
					if got := tab.Get(id); got == nil || *got != v {
						t.Fatalf("step %d: Get(%d) = %v, want the value", i, id, got)
					}
				}
				seen := map[int64]bool{}
				tab.Each(func(id int64, v **int64) {
					if **v != id {
						t.Fatalf("step %d: Each gave %d under ID %d", i, **v, id)
					}
					seen[id] = true
				})
				if len(seen) != len(model) {
					t.Fatalf("step %d: Each visited %d values, want %d", i, len(seen), len(model))
				}
			}
			if tab.Get(12345) != nil {
				t.Fatal("Get of an unknown ID found a value")
			}
			tab.Clear()
			if tab.Len() != 0 || tab.Get(0) != nil {
				t.Fatal("Clear left values")
			}
		})
	}
}

// TestTableValuesInPlace: with a struct value, Get's pointer changes the
// stored value (the watch layer marks per-watcher state this way).
func TestTableValuesInPlace(t *testing.T) {
	type opts struct{ used, sent bool }
	var tab Table[int64, opts]
	tab.Put(0, opts{used: true})
	tab.Put(1<<40, opts{used: true})
	for _, id := range []int64{0, 1 << 40} {
		tab.Get(id).sent = true
		if !tab.Get(id).sent {
			t.Fatalf("change through Get(%d) was lost", id)
		}
	}
}
