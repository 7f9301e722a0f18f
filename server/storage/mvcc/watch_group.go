package mvcc

import "go.etcd.io/etcd/api/v3/mvccpb"

// watcherSet is a set of watchers.
type watcherSet map[*watcher]struct{}

// watcherGroup finds the watchers of a key without visiting every watcher:
// single-key watchers sit in a map by key; range watchers, usually few, are
// checked one by one. Both are grouped by stream (streamSet), so a fan-out
// sends each stream its responses one after another: the stream's reader
// wakes once and finds them queued together, instead of once per response.
type watcherGroup struct {
	byKey  map[string]*streamSet
	ranges streamSet
	size   int
}

func newWatcherGroup() *watcherGroup {
	return &watcherGroup{byKey: make(map[string]*streamSet)}
}

func (g *watcherGroup) add(w *watcher) {
	g.size++
	if !w.single() {
		g.ranges.add(w)
		return
	}
	set := g.byKey[w.key]
	if set == nil {
		set = &streamSet{}
		g.byKey[w.key] = set
	}
	set.add(w)
}

func (g *watcherGroup) remove(w *watcher) {
	g.size--
	if !w.single() {
		g.ranges.remove(w)
		return
	}
	set := g.byKey[w.key]
	set.remove(w)
	if set.n == 0 {
		delete(g.byKey, w.key)
	}
}

// eachHolding calls f for every watcher whose range holds key, stream by
// stream. f may remove the watcher it is given from g.
func (g *watcherGroup) eachHolding(key []byte, f func(w *watcher)) {
	if set := g.byKey[string(key)]; set != nil {
		set.each(f)
	}
	g.ranges.each(func(w *watcher) {
		if w.holds(key) {
			f(w)
		}
	})
}

// streamSet is a set of watchers by stream. A watcher's slot is its index
// in its stream's slice; a watcher is in at most one set at a time.
type streamSet struct {
	byStream map[*watchStream][]*watcher
	n        int
}

func (s *streamSet) add(w *watcher) {
	if s.byStream == nil {
		s.byStream = make(map[*watchStream][]*watcher)
	}
	ws := s.byStream[w.stream]
	w.slot = int32(len(ws))
	s.byStream[w.stream] = append(ws, w)
	s.n++
}

// remove takes w out by moving its stream's last watcher into its slot.
func (s *streamSet) remove(w *watcher) {
	ws := s.byStream[w.stream]
	last := ws[len(ws)-1]
	ws[w.slot], last.slot = last, w.slot
	ws[len(ws)-1] = nil
	if ws = ws[:len(ws)-1]; len(ws) == 0 {
		delete(s.byStream, w.stream)
	} else {
		s.byStream[w.stream] = ws
	}
	s.n--
}

// each calls f for every watcher, one stream's after another. f may
// remove the watcher it is given: walking each slice from its end, a
// removal only moves an already visited watcher.
func (s *streamSet) each(f func(*watcher)) {
	for _, ws := range s.byStream {
		for i := len(ws) - 1; i >= 0; i-- {
			f(ws[i])
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
