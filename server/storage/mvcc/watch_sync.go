package mvcc

import (
	"math"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/storage/backend"
)

// history is what one catch-up read found: every event of the revisions
// [from, upto] (whole revisions only) and the compacted revision then.
type history struct {
	events     []*mvccpb.Event
	upto       int64
	compactRev int64
}

// syncUnsynced reads one batch of history for up to maxWatchersPerSync
// unsynced watchers and delivers it; it returns how many watchers moved on.
// The backend is read without mu, so writers are not held up meanwhile.
func (h *watchHub) syncUnsynced() int {
	chosen, from, limit := h.chooseUnsynced()
	if len(chosen) == 0 {
		return 0
	}
	hist := h.s.readHistory(from, limit)
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deliverHistory(chosen, hist)
}

// chooseUnsynced picks unsynced watchers to catch up and the revision to
// read from; watchers behind the compacted revision are answered instead.
func (h *watchHub) chooseUnsynced() (chosen []*watcher, from int64, limit int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held {
		return nil, 0, 0
	}
	compactRev := h.s.FirstRev()
	from = math.MaxInt64
	for w := range h.unsynced {
		if len(chosen) == maxWatchersPerSync {
			break
		}
		if h.dropIfCompacted(w, compactRev) {
			continue
		}
		chosen = append(chosen, w)
		from = min(from, w.minRev)
	}
	return chosen, from, h.batchLimit
}

// dropIfCompacted handles an unsynced watcher that needs a compacted
// revision: it sends the compaction response and removes the watcher, or,
// if the channel is full, leaves it for the next round. It reports whether
// w is compacted. The caller holds mu.
func (h *watchHub) dropIfCompacted(w *watcher, compactRev int64) bool {
	if w.minRev >= compactRev {
		return false
	}
	if w.trySend(WatchResponse{WatchID: w.id, CompactRevision: compactRev}) {
		h.detach(w)
	}
	return true
}

// deliverHistory sends each chosen watcher that is still unsynced its
// events of hist; a watcher that reached the notified revision joins the
// synced group. It returns how many watchers moved on. The caller holds mu.
func (h *watchHub) deliverHistory(chosen []*watcher, hist history) (moved int) {
	g := newWatcherGroup()
	ready := chosen[:0]
	for _, w := range chosen {
		if w.state == stateUnsynced && !h.dropIfCompacted(w, hist.compactRev) && w.minRev <= hist.upto {
			g.add(w)
			ready = append(ready, w)
		}
	}
	byWatcher := make(map[*watcher][]*mvccpb.Event, len(ready))
	fanOut(g, hist.events, h.counts, func(w *watcher, evs []*mvccpb.Event) { byWatcher[w] = evs })
	for _, w := range ready {
		moved++
		if evs := byWatcher[w]; len(evs) > 0 {
			resp := WatchResponse{WatchID: w.id, Events: evs, Revision: hist.upto}
			if !w.trySend(resp) {
				delete(h.unsynced, w)
				h.makeVictim(w, resp, hist.upto+1)
				continue
			}
		}
		w.minRev = hist.upto + 1
		if w.minRev > h.notifiedRev {
			delete(h.unsynced, w)
			w.state = stateSynced
			h.synced.add(w)
		}
	}
	return moved
}

// readHistory reads the events of the revisions from `from` on, at most
// limit key-bucket entries but never part of a revision, up to the current
// revision. No compaction can start meanwhile (txnMu is held shared), and
// revisions from the compacted one on stay in the backend.
func (s *Store) readHistory(from int64, limit int) history {
	s.txnMu.RLock()
	defer s.txnMu.RUnlock()
	s.revMu.RLock()
	cur, compactRev := s.currentRev, max(s.compactMainRev, 0)
	s.revMu.RUnlock()

	hist := history{upto: cur, compactRev: compactRev}
	from = max(from, compactRev, 1)
	if from > cur {
		return hist
	}
	tx := s.b.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	keys, vals := tx.UnsafeRange(backend.BucketKey,
		RevToBytes(Revision{Main: from}), RevToBytes(Revision{Main: cur + 1}), int64(limit+1))
	if len(keys) > limit {
		keys, vals, hist.upto = wholeRevisions(tx, keys, vals, limit)
	}
	hist.events = s.decodeEvents(keys, vals)
	return hist
}

// wholeRevisions trims a read of limit+1 entries to at most limit entries
// of complete revisions and returns the last revision kept. A revision with
// more than limit entries is read whole instead. The caller holds tx's lock.
func wholeRevisions(tx backend.ReadTx, keys, vals [][]byte, limit int) (k, v [][]byte, upto int64) {
	last := BytesToRev(keys[limit-1]).Main
	if BytesToRev(keys[limit]).Main != last {
		return keys[:limit], vals[:limit], last
	}
	cut := limit - 1
	for cut > 0 && BytesToRev(keys[cut-1]).Main == last {
		cut--
	}
	if cut > 0 {
		return keys[:cut], vals[:cut], last - 1
	}
	k, v = tx.UnsafeRange(backend.BucketKey,
		RevToBytes(Revision{Main: last}), RevToBytes(Revision{Main: last + 1}), 0)
	return k, v, last
}

// decodeEvents turns key-bucket entries into events; a tombstone's stored
// KeyValue holds only the key, so the event gets the deletion's revision as
// ModRevision. The caller holds the read lock the entries come from.
func (s *Store) decodeEvents(keys, vals [][]byte) []*mvccpb.Event {
	evs := make([]*mvccpb.Event, 0, len(keys))
	for i, v := range vals {
		kv := &mvccpb.KeyValue{}
		if err := proto.Unmarshal(v, kv); err != nil {
			s.lg.Panic("failed to decode a KeyValue of the key bucket",
				zap.Stringer("revision", BytesToRev(keys[i])), zap.Error(err))
		}
		ev := &mvccpb.Event{Type: mvccpb.Event_PUT, Kv: kv}
		if IsTombstone(keys[i]) {
			ev.Type = mvccpb.Event_DELETE
			kv.ModRevision = BytesToRev(keys[i]).Main
		}
		evs = append(evs, ev)
	}
	return evs
}
