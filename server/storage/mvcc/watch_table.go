package mvcc

// maxDenseWatchID bounds the IDs watcherTable keeps in its slice, so that
// a client choosing a huge ID cannot make a stream allocate for it.
const maxDenseWatchID = 1 << 16

// watcherTable is a stream's watchers by ID. IDs the stream picks are
// small and consecutive (from 0), so they index a slice: a pointer per
// watcher instead of a map entry, which at 100,000 watchers is most of a
// stream's own memory. IDs a client chose beyond that go in a map.
type watcherTable struct {
	dense  []*watcher // by ID; nil where there is none
	sparse map[WatchID]*watcher
	n      int
}

// get returns the watcher with id, nil if none. An ID can be in sparse
// while inside dense's range: the client chose it before dense grew there.
func (t *watcherTable) get(id WatchID) *watcher {
	if t.inDense(id) {
		return t.dense[id]
	}
	return t.sparse[id]
}

// inDense: id is in the slice (not in the map).
func (t *watcherTable) inDense(id WatchID) bool {
	return id >= 0 && id < WatchID(len(t.dense)) && t.dense[id] != nil
}

// put stores w under id, which must be free.
func (t *watcherTable) put(id WatchID, w *watcher) {
	t.n++
	switch {
	case id >= 0 && id < WatchID(len(t.dense)):
		t.dense[id] = w
	case id >= 0 && id < maxDenseWatchID && id <= WatchID(2*len(t.dense)+8):
		for WatchID(len(t.dense)) < id {
			t.dense = append(t.dense, nil)
		}
		t.dense = append(t.dense, w)
	default:
		if t.sparse == nil {
			t.sparse = make(map[WatchID]*watcher)
		}
		t.sparse[id] = w
	}
}

func (t *watcherTable) delete(id WatchID) {
	if t.get(id) == nil {
		return
	}
	t.n--
	if t.inDense(id) {
		t.dense[id] = nil
		return
	}
	delete(t.sparse, id)
}

func (t *watcherTable) len() int { return t.n }

// each calls f for every watcher.
func (t *watcherTable) each(f func(*watcher)) {
	for _, w := range t.dense {
		if w != nil {
			f(w)
		}
	}
	for _, w := range t.sparse {
		f(w)
	}
}

// clear removes every watcher.
func (t *watcherTable) clear() { *t = watcherTable{} }
