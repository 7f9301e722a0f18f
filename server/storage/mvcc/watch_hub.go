package mvcc

import (
	"sync"
	"time"

	"github.com/cairnkv/cairn/pkg/wait"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

const (
	// defaultWatchBatchLimit is how many key-bucket entries one catch-up
	// read takes (more only when a single revision is bigger).
	defaultWatchBatchLimit = 1000
	// maxWatchersPerSync bounds the watchers one catch-up read serves, as etcd does.
	maxWatchersPerSync = 512
	// watchRetryInterval is how soon the hub retries victims and unsynced
	// watchers that made no progress.
	watchRetryInterval = 10 * time.Millisecond
)

// watchHub holds every watcher of a Store. Watchers are synced (they get
// each write's events from the dispatcher, which fans out the revisions
// notify queues at the end of each write transaction),
// unsynced (behind: a background goroutine reads their history from the
// backend in batches until they reach the notified revision) or victims (a
// response did not fit the stream's channel: it is kept and retried, then
// the watcher catches up from the backend). Writers never wait for a
// consumer: every send is non-blocking.
type watchHub struct {
	s *Store

	mu sync.Mutex
	// notifiedRev is the newest revision dispatched. Every synced
	// watcher has received each event up to it.
	notifiedRev int64
	synced      *watcherGroup
	unsynced    watcherSet
	victims     map[*watcher]pendingResponse
	counts      map[*watcher]int // fanOut's scratch space, kept for its capacity
	batchLimit  int              // key-bucket entries per catch-up read
	held        bool             // tests: the background goroutine does nothing

	// qmu guards queue, the revisions written but not yet dispatched, in
	// revision order. Lock order: mu, then qmu.
	qmu    sync.Mutex
	queue  []notification
	spare  []notification // the drained queue's array, for reuse
	queued chan struct{}  // capacity 1: the queue has new revisions

	kick chan struct{} // capacity 1: new background work
	quit chan struct{}
	done sync.WaitGroup
}

// pendingResponse is a victim's response; once delivered the watcher needs
// revisions from next on.
type pendingResponse struct {
	resp WatchResponse
	next int64
}

// newWatchHub starts the hub of s, whose revision is currentRev.
func newWatchHub(s *Store, currentRev int64) *watchHub {
	h := &watchHub{
		s:           s,
		notifiedRev: currentRev,
		synced:      newWatcherGroup(),
		unsynced:    make(watcherSet),
		victims:     make(map[*watcher]pendingResponse),
		counts:      make(map[*watcher]int),
		batchLimit:  defaultWatchBatchLimit,
		queued:      make(chan struct{}, 1),
		kick:        make(chan struct{}, 1),
		quit:        make(chan struct{}),
	}
	h.done.Add(2)
	go h.run()
	go h.dispatchLoop()
	return h
}

// stop ends the background goroutines and waits for them.
func (h *watchHub) stop() {
	close(h.quit)
	h.done.Wait()
}

func (h *watchHub) wake() { wait.Wake(h.kick) }

// WatchBacklog reports the watchers behind the notified revision (catching
// up or holding an undelivered response) and the events those responses
// hold, for the metrics scrape.
func (s *Store) WatchBacklog() (slowWatchers, pendingEvents int) {
	h := s.watch
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.victims {
		pendingEvents += len(p.resp.Events)
	}
	return len(h.unsynced) + len(h.victims), pendingEvents
}

// add places a new watcher: synced if it starts after the notified
// revision, unsynced (caught up in the background) otherwise. It dispatches
// the queue first, so the notified revision is the store's unless a write
// ends meanwhile. A watcher from "now" starts after the store's revision:
// revisions up to it still queued are older than its minRev, so dispatch
// skips them.
func (h *watchHub) add(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dispatch()
	w.minRev = w.startRev
	if w.startRev == 0 {
		w.minRev = h.s.Rev() + 1
	}
	h.place(w)
}

// place puts a watcher that is in no group into the one its minRev calls
// for. The caller holds mu.
func (h *watchHub) place(w *watcher) {
	if w.minRev > h.notifiedRev {
		w.state = stateSynced
		h.synced.add(w)
		return
	}
	w.state = stateUnsynced
	h.unsynced[w] = struct{}{}
	h.wake()
}

// remove takes a watcher out of whatever group holds it. The caller holds
// the stream's mu.
func (h *watchHub) remove(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.detach(w)
}

// detach removes w from its group; it receives nothing anymore. The caller
// holds mu.
func (h *watchHub) detach(w *watcher) {
	switch w.state {
	case stateSynced:
		h.synced.remove(w)
	case stateUnsynced:
		delete(h.unsynced, w)
	case stateVictim:
		delete(h.victims, w)
	}
	w.state = stateDone
}

// closeStream removes the watchers of ws and closes its channel, under mu
// so no send can race with the close. The caller holds ws.mu.
func (h *watchHub) closeStream(ws *watchStream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ws.watchers.each(h.detach)
	close(ws.ch)
}

// notify hands the changes of the write transaction that creates revision
// rev to the hub, then calls publish (which makes rev the store's
// revision). The write transaction calls it while it still holds the
// batch, so revisions are queued in order. notify does no per-watcher work:
// the dispatcher goroutine fans the queued revisions out to the synced
// watchers, so many or slow watchers never hold up a writer.
func (h *watchHub) notify(rev int64, changes []*mvccpb.KeyValue, publish func()) {
	h.qmu.Lock()
	h.queue = append(h.queue, notification{rev: rev, changes: changes})
	h.qmu.Unlock()
	// Queued before it is published: every revision a reader can see is
	// either dispatched or in the queue.
	publish()
	wait.Wake(h.queued)
}

// makeVictim keeps resp for a watcher in no group. The caller holds mu.
func (h *watchHub) makeVictim(w *watcher, resp WatchResponse, next int64) {
	w.state = stateVictim
	h.victims[w] = pendingResponse{resp: resp, next: next}
	h.wake()
}

// progress sends w the notified revision if it has received everything up
// to it. The caller holds the stream's mu.
func (h *watchHub) progress(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dispatch()
	if h.isProgressed(w) {
		w.trySend(WatchResponse{WatchID: w.id, Revision: h.notifiedRev})
	}
}

// progressAll sends one progress response for the whole stream if every
// watcher of it is synced. The caller holds ws.mu.
func (h *watchHub) progressAll(ws *watchStream) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dispatch()
	all := true
	ws.watchers.each(func(w *watcher) { all = all && h.isProgressed(w) })
	if !all {
		return false
	}
	if ws.watchers.Len() > 0 {
		select {
		case ws.ch <- WatchResponse{WatchID: ProgressAllWatchID, Revision: h.notifiedRev}:
		default:
		}
	}
	return true
}

// isProgressed: w is synced and does not start after the notified revision.
func (h *watchHub) isProgressed(w *watcher) bool {
	return w.state == stateSynced && w.startRev <= h.notifiedRev
}

// run is the background goroutine: it retries victims and catches up
// unsynced watchers, at once while that makes progress, else when kicked or
// after watchRetryInterval while work is left.
func (h *watchHub) run() {
	defer h.done.Done()
	timer := time.NewTimer(watchRetryInterval)
	defer timer.Stop()
	for {
		progressed, left := h.step()
		var retry <-chan time.Time
		if left {
			timer.Reset(watchRetryInterval)
			retry = timer.C
		}
		if progressed && left {
			retry = closedTimeChan
		}
		select {
		case <-h.quit:
			return
		case <-h.kick:
		case <-retry:
		}
	}
}

// closedTimeChan is always ready: run goes on at once.
var closedTimeChan = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// step does one round of background work and reports whether it delivered
// anything and whether work is left.
func (h *watchHub) step() (progressed, left bool) {
	n := h.retryVictims() + h.syncUnsynced()
	h.mu.Lock()
	defer h.mu.Unlock()
	return n > 0, !h.held && len(h.victims)+len(h.unsynced) > 0
}

// retryVictims sends the kept responses that fit now and moves their
// watchers on; it returns how many it delivered.
func (h *watchHub) retryVictims() (moved int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held {
		return 0
	}
	for w, p := range h.victims {
		if !w.trySend(p.resp) {
			continue
		}
		delete(h.victims, w)
		w.minRev = p.next
		h.place(w)
		moved++
	}
	return moved
}
