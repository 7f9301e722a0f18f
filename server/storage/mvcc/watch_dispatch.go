package mvcc

import "go.etcd.io/etcd/api/v3/mvccpb"

// notification is one write transaction's changes, queued by notify for
// the dispatcher.
type notification struct {
	rev     int64
	changes []*mvccpb.KeyValue
}

// dispatchLoop is the dispatcher goroutine: it fans queued revisions out to
// the synced watchers whenever notify queues some. On stop it dispatches
// what is left, so that nothing written before stop is lost.
func (h *watchHub) dispatchLoop() {
	defer h.done.Done()
	for {
		select {
		case <-h.quit:
			h.mu.Lock()
			h.dispatch()
			h.mu.Unlock()
			return
		case <-h.queued:
			h.mu.Lock()
			h.dispatch()
			h.mu.Unlock()
		}
	}
}

// dispatch hands every queued revision, in order, to the synced watchers
// and moves notifiedRev to the last one. A watcher whose channel is full
// becomes a victim and leaves the synced group. The caller holds mu.
func (h *watchHub) dispatch() {
	h.qmu.Lock()
	batch := h.queue
	if len(batch) > 0 {
		h.queue, h.spare = h.spare[:0], nil
	}
	h.qmu.Unlock()
	if len(batch) == 0 {
		return
	}
	for _, n := range batch {
		h.notifyRev(n.rev, n.changes)
	}
	clear(batch) // let the changes go
	h.qmu.Lock()
	h.spare = batch[:0]
	h.qmu.Unlock()
}

// notifyRev sends the events of revision rev to the synced watchers that
// want them. The caller holds mu.
func (h *watchHub) notifyRev(rev int64, changes []*mvccpb.KeyValue) {
	h.notifiedRev = rev
	if h.synced.size == 0 {
		return
	}
	fanOut(h.synced, changesToEvents(changes), h.counts, func(w *watcher, evs []*mvccpb.Event) {
		resp := WatchResponse{WatchID: w.id, Events: evs, Revision: rev}
		if !w.trySend(resp) {
			h.synced.remove(w)
			h.makeVictim(w, resp, rev+1)
		}
	})
}
