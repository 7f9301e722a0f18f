package mvcc

import (
	"bytes"
	"errors"
	"slices"
	"sync"

	"github.com/cairnkv/cairn/server/metrics"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Errors of WatchStream.
var (
	ErrWatcherNotExist    = errors.New("mvcc: watcher does not exist")
	ErrEmptyWatcherRange  = errors.New("mvcc: watcher range is empty")
	ErrWatcherDuplicateID = errors.New("mvcc: duplicate watch ID provided on the WatchStream")
	ErrWatchStreamClosed  = errors.New("mvcc: watch stream is closed")
	ErrNegativeStartRev   = errors.New("mvcc: negative watch start revision")
)

const (
	// AutoWatchID asks Watch to pick the ID: the smallest unused one from
	// the stream's counter, starting at 0, as etcd numbers watchers.
	AutoWatchID WatchID = 0
	// ProgressAllWatchID is the WatchID of the response RequestProgressAll
	// sends (etcd's InvalidWatchID).
	ProgressAllWatchID WatchID = -1
	// defaultWatchChanLen is etcd's buffer of a stream's response channel.
	defaultWatchChanLen = 128
)

// WatchID names a watcher within its stream.
type WatchID int64

// FilterFunc reports whether a watcher must not receive e (true = drop it).
// Filters run while the store's watcher lock is held: keep them cheap.
type FilterFunc func(e *mvccpb.Event) bool

// WatchResponse carries events of one watcher. Events are complete
// revisions in revision order. Events and their KeyValues are shared with
// other watchers and the write transaction: treat them as read-only (copy an
// Event before setting its PrevKv).
type WatchResponse struct {
	WatchID WatchID
	Events  []*mvccpb.Event
	// Revision is the revision up to which the watcher has now received
	// everything: the event's revision for a live notification, the end of
	// the catch-up batch for history, the store's revision for progress.
	// 0 in a compaction response.
	Revision int64
	// CompactRevision is set (and nothing else but WatchID) when the
	// watcher's next revision was compacted; the watcher then receives
	// nothing more, and the caller should Cancel it.
	CompactRevision int64
}

// WatchStream multiplexes watchers over one response channel.
type WatchStream interface {
	// Watch adds a watcher on key, or on [key, end) when end is set (end
	// "\x00" or non-nil empty: every key >= key), from startRev on: 0 means
	// from the next revision, a past revision replays the history from
	// there. id AutoWatchID picks an ID; another id must not be in use on
	// the stream (ErrWatcherDuplicateID).
	Watch(id WatchID, key, end []byte, startRev int64, fcs ...FilterFunc) (WatchID, error)
	// Chan delivers every response of the stream's watchers; Close closes it.
	Chan() <-chan WatchResponse
	// RequestProgress sends an empty response with the notified revision if
	// the watcher is synced (has received every event up to that revision)
	// and its start revision is not ahead of it; otherwise nothing.
	RequestProgress(id WatchID)
	// RequestProgressAll sends one empty response with WatchID
	// ProgressAllWatchID if every watcher of the stream is synced (nothing
	// if the stream has none) and reports true; false if some is not, so
	// the caller may ask again later.
	RequestProgressAll() bool
	// Cancel removes a watcher; ErrWatcherNotExist if there is none with id.
	Cancel(id WatchID) error
	// Close removes every watcher and closes Chan.
	Close()
	// Rev is the store's current revision.
	Rev() int64
}

// NewWatchStream opens a stream of watchers on s with etcd's channel buffer
// of 128 responses. A consumer that falls behind never slows writers down:
// its watchers catch up from the backend once it reads again.
func (s *Store) NewWatchStream() WatchStream {
	return s.newWatchStream(defaultWatchChanLen)
}

func (s *Store) newWatchStream(chanLen int) *watchStream {
	metrics.WatchStreams.Inc()
	return &watchStream{
		h:  s.watch,
		ch: make(chan WatchResponse, chanLen),
	}
}

// watchStream implements WatchStream. Lock order: mu, then the hub's mu.
type watchStream struct {
	h  *watchHub
	ch chan WatchResponse // sent to only under the hub's mu, closed under it

	mu       sync.Mutex
	watchers watcherTable // canceled ones leave; compacted ones stay until Cancel
	nextID   WatchID
	closed   bool
}

func (ws *watchStream) Watch(id WatchID, key, end []byte, startRev int64, fcs ...FilterFunc) (WatchID, error) {
	r := newKeyRange(key, end) // newWatcher copies what it keeps
	if !r.single() && !r.unbounded && bytes.Compare(r.key, r.end) >= 0 {
		return -1, ErrEmptyWatcherRange
	}
	if startRev < 0 {
		return -1, ErrNegativeStartRev
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return -1, ErrWatchStreamClosed
	}
	if id == AutoWatchID {
		id = ws.freeID()
	} else if ws.watchers.get(id) != nil {
		return -1, ErrWatcherDuplicateID
	}
	w := newWatcher(id, ws, r, startRev, fcs)
	ws.watchers.Put(id, w)
	ws.h.add(w)
	metrics.Watchers.Inc()
	return id, nil
}

// freeID returns the next unused ID of the stream's counter.
func (ws *watchStream) freeID() WatchID {
	for ws.watchers.get(ws.nextID) != nil {
		ws.nextID++
	}
	id := ws.nextID
	ws.nextID++
	return id
}

func (ws *watchStream) Chan() <-chan WatchResponse { return ws.ch }

func (ws *watchStream) RequestProgress(id WatchID) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.watchers.get(id); w != nil && !ws.closed {
		ws.h.progress(w)
	}
}

func (ws *watchStream) RequestProgressAll() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return false
	}
	return ws.h.progressAll(ws)
}

func (ws *watchStream) Cancel(id WatchID) error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := ws.watchers.get(id)
	if w == nil || ws.closed {
		return ErrWatcherNotExist
	}
	ws.h.remove(w)
	ws.watchers.Delete(id)
	metrics.Watchers.Dec()
	return nil
}

func (ws *watchStream) Close() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return
	}
	ws.closed = true
	ws.h.closeStream(ws)
	metrics.Watchers.Sub(float64(ws.watchers.Len()))
	metrics.WatchStreams.Dec()
	ws.watchers.Clear()
}

func (ws *watchStream) Rev() int64 { return ws.h.s.Rev() }

// watcherState says where a watcher is; the hub's mu guards it.
type watcherState uint8

const (
	// stateSynced: in the synced group, live notifications reach it.
	stateSynced watcherState = iota
	// stateUnsynced: behind the notified revision, catching up from the backend.
	stateUnsynced
	// stateVictim: a response did not fit its channel; it waits in victims.
	stateVictim
	// stateDone: canceled, closed or compacted; nothing reaches it anymore.
	stateDone
)

// watcher is one watch. The hub's mu guards minRev and state. It is kept
// small (80 bytes): a member may hold hundreds of thousands.
type watcher struct {
	id     WatchID
	stream *watchStream
	// key is the watched key or the range's start; end is the range's end,
	// "" for a single key or a range without end (span says which).
	key, end string
	startRev int64
	minRev   int64         // the first revision the watcher has not received yet
	fcs      *[]FilterFunc // nil without filters, as most watchers are
	slot     int32         // its index in the streamSet holding it (hub's mu)
	state    watcherState
	span     watchSpan
}

// watchSpan is the shape of a watcher's range.
type watchSpan uint8

const (
	spanKey       watchSpan = iota // the single key
	spanRange                      // [key, end)
	spanUnbounded                  // every key >= key
)

func newWatcher(id WatchID, ws *watchStream, r keyRange, startRev int64, fcs []FilterFunc) *watcher {
	w := &watcher{id: id, stream: ws, key: string(r.key), end: string(r.end), startRev: startRev}
	switch {
	case r.unbounded:
		w.span, w.end = spanUnbounded, ""
	case !r.single():
		w.span = spanRange
	}
	if len(fcs) > 0 {
		own := slices.Clone(fcs)
		w.fcs = &own
	}
	return w
}

// single reports whether the watcher watches one key.
func (w *watcher) single() bool { return w.span == spanKey }

// holds reports whether key is in the watcher's range. (Comparing
// string(key) allocates nothing.)
func (w *watcher) holds(key []byte) bool {
	switch w.span {
	case spanKey:
		return string(key) == w.key
	case spanUnbounded:
		return string(key) >= w.key
	}
	return string(key) >= w.key && string(key) < w.end
}

// wants reports whether ev goes to the watcher: new enough and not filtered.
func (w *watcher) wants(ev *mvccpb.Event) bool {
	if ev.Kv.ModRevision < w.minRev {
		return false
	}
	if w.fcs == nil {
		return true
	}
	for _, filter := range *w.fcs {
		if filter(ev) {
			return false
		}
	}
	return true
}

// trySend puts resp on the stream's channel unless it is full.
func (w *watcher) trySend(resp WatchResponse) bool {
	select {
	case w.stream.ch <- resp:
		metrics.WatchEvents.Add(float64(len(resp.Events)))
		return true
	default:
		return false
	}
}
