package mvcc

import "github.com/cairnkv/cairn/pkg/idtable"

// watcherTable is a stream's watchers by ID (see idtable: the IDs the
// stream picks index a slice, a client's own IDs beyond it go in a map).
type watcherTable struct {
	idtable.Table[WatchID, *watcher]
}

// get returns the watcher with id, nil if none.
func (t *watcherTable) get(id WatchID) *watcher {
	if w := t.Get(id); w != nil {
		return *w
	}
	return nil
}

// each calls f for every watcher.
func (t *watcherTable) each(f func(*watcher)) {
	t.Each(func(_ WatchID, w **watcher) { f(*w) })
}
