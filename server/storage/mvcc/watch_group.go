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
	if !w.single() {
		g.ranges[w] = struct{}{}
		return
	}
	set := g.byKey[w.key]
	if set == nil {
		set = make(watcherSet)
		g.byKey[w.key] = set
	}
	set[w] = struct{}{}
}

func (g *watcherGroup) remove(w *watcher) {
	g.size--
	if !w.single() {
		delete(g.ranges, w)
		return
	}
	set := g.byKey[w.key]
	delete(set, w)
	if len(set) == 0 {
		delete(g.byKey, w.key)
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

// fanOut calls deliver once for every watcher of g that wants some of evs
// (in revision order) with the events it wants, in order. Watchers that
// want all of them share evs itself, so that a stream's encoder sees the
// same events for each and encodes them once; a single event needs no
// bookkeeping at all. counts is scratch space, left empty. deliver may
// remove the watcher from g.
func fanOut(g *watcherGroup, evs []*mvccpb.Event, counts map[*watcher]int, deliver func(*watcher, []*mvccpb.Event)) {
	if len(evs) == 1 {
		ev := evs[0]
		g.eachHolding(ev.Kv.Key, func(w *watcher) {
			if w.wants(ev) {
				deliver(w, evs)
			}
		})
		return
	}
	for _, ev := range evs {
		g.eachHolding(ev.Kv.Key, func(w *watcher) {
			if w.wants(ev) {
				counts[w]++
			}
		})
	}
	for w, n := range counts {
		if n == len(evs) {
			deliver(w, evs)
			continue
		}
		own := make([]*mvccpb.Event, 0, n)
		for _, ev := range evs {
			if w.holds(ev.Kv.Key) && w.wants(ev) {
				own = append(own, ev)
			}
		}
		deliver(w, own)
	}
	clear(counts)
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
