package mvcc

import "go.etcd.io/etcd/api/v3/mvccpb"

// watcherSet is a set of watchers.
type watcherSet map[*watcher]struct{}

// watcherGroup finds the watchers of a key without visiting every watcher:
// single-key watchers sit in a map by key; range watchers, usually few, are
// checked one by one.
type watcherGroup struct {
	byKey  map[string]watcherSet
	ranges watcherSet
	size   int
}

func newWatcherGroup() *watcherGroup {
	return &watcherGroup{byKey: make(map[string]watcherSet), ranges: make(watcherSet)}
}

func (g *watcherGroup) add(w *watcher) {
	g.size++
	if !w.r.single() {
		g.ranges[w] = struct{}{}
		return
	}
	set := g.byKey[string(w.r.key)]
	if set == nil {
		set = make(watcherSet)
		g.byKey[string(w.r.key)] = set
	}
	set[w] = struct{}{}
}

func (g *watcherGroup) remove(w *watcher) {
	g.size--
	if !w.r.single() {
		delete(g.ranges, w)
		return
	}
	set := g.byKey[string(w.r.key)]
	delete(set, w)
	if len(set) == 0 {
		delete(g.byKey, string(w.r.key))
	}
}

// eachHolding calls f for every watcher whose range holds key.
func (g *watcherGroup) eachHolding(key []byte, f func(w *watcher)) {
	for w := range g.byKey[string(key)] {
		f(w)
	}
	for w := range g.ranges {
		if w.holds(key) {
			f(w)
		}
	}
}

// eventsByWatcher gives each watcher of g the events of evs (in revision
// order) it wants, keeping their order. Watchers that want none are absent.
func eventsByWatcher(g *watcherGroup, evs []*mvccpb.Event) map[*watcher][]*mvccpb.Event {
	out := make(map[*watcher][]*mvccpb.Event)
	for _, ev := range evs {
		g.eachHolding(ev.Kv.Key, func(w *watcher) {
			if w.wants(ev) {
				out[w] = append(out[w], ev)
			}
		})
	}
	return out
}

// changesToEvents turns a write transaction's changes into events: a change
// with version 0 is a deletion (a KeyValue with only Key and ModRevision).
func changesToEvents(changes []*mvccpb.KeyValue) []*mvccpb.Event {
	evs := make([]*mvccpb.Event, len(changes))
	for i, kv := range changes {
		typ := mvccpb.Event_PUT
		if kv.Version == 0 {
			typ = mvccpb.Event_DELETE
		}
		evs[i] = &mvccpb.Event{Type: typ, Kv: kv}
	}
	return evs
}
