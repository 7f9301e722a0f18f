package v3rpc

import "github.com/cairnkv/cairn/server/storage/mvcc"

// maxDenseWatchID bounds the IDs optionsTable keeps in its slice, so that a
// client choosing a huge ID cannot make a stream allocate for it.
const maxDenseWatchID = 1 << 16

// optionsTable holds a stream's watchOptions by watch ID. The store picks
// IDs consecutively from 0, so they index a slice of values: a few bytes
// per watcher where a map of pointers took ~30 (with 100,000 watchers that
// is a good part of what a watcher costs). IDs a client chose beyond the
// slice go in a map.
type optionsTable struct {
	dense  []watchOptions // by ID; live marks the used ones
	sparse map[mvcc.WatchID]*watchOptions
}

// get returns id's options, nil if none. The pointer is valid until the
// next put.
func (t *optionsTable) get(id mvcc.WatchID) *watchOptions {
	if t.inDense(id) {
		return &t.dense[id]
	}
	return t.sparse[id]
}

// inDense: id's options are in the slice. An ID can be in sparse while
// inside the slice's range: the client chose it before the slice grew.
func (t *optionsTable) inDense(id mvcc.WatchID) bool {
	return id >= 0 && id < mvcc.WatchID(len(t.dense)) && t.dense[id].live
}

// put stores opts under id, which must be free.
func (t *optionsTable) put(id mvcc.WatchID, opts watchOptions) {
	opts.live = true
	switch {
	case id >= 0 && id < mvcc.WatchID(len(t.dense)):
		t.dense[id] = opts
	case id >= 0 && id < maxDenseWatchID && id <= mvcc.WatchID(2*len(t.dense)+8):
		for mvcc.WatchID(len(t.dense)) < id {
			t.dense = append(t.dense, watchOptions{})
		}
		t.dense = append(t.dense, opts)
	default:
		if t.sparse == nil {
			t.sparse = make(map[mvcc.WatchID]*watchOptions)
		}
		t.sparse[id] = &opts
	}
}

func (t *optionsTable) delete(id mvcc.WatchID) {
	if t.inDense(id) {
		t.dense[id] = watchOptions{}
		return
	}
	delete(t.sparse, id)
}

// each calls f with every watcher's ID and options.
func (t *optionsTable) each(f func(mvcc.WatchID, *watchOptions)) {
	for i := range t.dense {
		if t.dense[i].live {
			f(mvcc.WatchID(i), &t.dense[i])
		}
	}
	for id, opts := range t.sparse {
		f(id, opts)
	}
}
