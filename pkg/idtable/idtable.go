// Package idtable holds values by small integer IDs: a slice indexed by ID
// for the IDs a program hands out itself (consecutive from 0), and a map
// for the few others (IDs a client chose). At 100,000 watch streams'
// watchers, a slot per value instead of a map entry is most of what the
// bookkeeping costs.
package idtable

// MaxDense bounds the IDs kept in the slice, so that a client choosing a
// huge ID cannot make a table allocate for it.
const MaxDense = 1 << 16

// Table holds values of type V by ID. The zero V marks an empty slot, so
// a value stored must not be V's zero value (a nil pointer, or a struct
// with a "used" field set). The zero Table is empty and ready to use.
type Table[ID ~int64, V comparable] struct {
	dense  []V // by ID
	sparse map[ID]*V
	n      int
}

// Get returns a pointer to id's value, nil if there is none. The pointer
// is valid until the next Put.
func (t *Table[ID, V]) Get(id ID) *V {
	if t.inDense(id) {
		return &t.dense[id]
	}
	return t.sparse[id]
}

// inDense: id's value is in the slice. An ID can be in sparse while inside
// the slice's range: it was put before the slice grew there.
func (t *Table[ID, V]) inDense(id ID) bool {
	var zero V
	return id >= 0 && id < ID(len(t.dense)) && t.dense[id] != zero
}

// Put stores v, which must not be the zero V, under id, which must be free.
func (t *Table[ID, V]) Put(id ID, v V) {
	t.n++
	switch {
	case id >= 0 && id < ID(len(t.dense)):
		t.dense[id] = v
	case id >= 0 && id < MaxDense && id <= ID(2*len(t.dense)+8):
		var zero V
		for ID(len(t.dense)) < id {
			t.dense = append(t.dense, zero)
		}
		t.dense = append(t.dense, v)
	default:
		if t.sparse == nil {
			t.sparse = make(map[ID]*V)
		}
		t.sparse[id] = &v
	}
}

// Delete removes id's value, if any.
func (t *Table[ID, V]) Delete(id ID) {
	if t.Get(id) == nil {
		return
	}
	t.n--
	if t.inDense(id) {
		var zero V
		t.dense[id] = zero
		return
	}
	delete(t.sparse, id)
}

// Len is the number of values.
func (t *Table[ID, V]) Len() int { return t.n }

// Each calls f with every ID and a pointer to its value, the slice's in ID
// order first.
func (t *Table[ID, V]) Each(f func(ID, *V)) {
	var zero V
	for i := range t.dense {
		if t.dense[i] != zero {
			f(ID(i), &t.dense[i])
		}
	}
	for id, v := range t.sparse {
		f(id, v)
	}
}

// Clear removes every value.
func (t *Table[ID, V]) Clear() { *t = Table[ID, V]{} }
