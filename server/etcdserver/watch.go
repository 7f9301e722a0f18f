package etcdserver

import (
	"sync"

	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// Watch streams live on the member's local store, so every member serves
// them, leader or not. A snapshot from the leader replaces the store; the
// streams opened on the old one are then closed (closeBackendStores), so
// their gRPC streams end with codes.Unavailable and clients resume on the
// new store from the last revision they received. Stop closes them too.

// watchStreams is the set of open watch streams of the current store.
type watchStreams struct {
	mu   sync.Mutex
	open map[*memberWatchStream]struct{}
}

// memberWatchStream is an mvcc.WatchStream that leaves the set when closed.
type memberWatchStream struct {
	mvcc.WatchStream
	set *watchStreams
}

func (ws *memberWatchStream) Close() {
	ws.set.remove(ws)
	ws.WatchStream.Close()
}

func (w *watchStreams) add(inner mvcc.WatchStream) *memberWatchStream {
	ws := &memberWatchStream{WatchStream: inner, set: w}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.open == nil {
		w.open = make(map[*memberWatchStream]struct{})
	}
	w.open[ws] = struct{}{}
	return ws
}

func (w *watchStreams) remove(ws *memberWatchStream) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.open, ws)
}

// closeAll closes every open stream: their Chans close.
func (w *watchStreams) closeAll() {
	w.mu.Lock()
	open := w.open
	w.open = nil
	w.mu.Unlock()
	for ws := range open {
		ws.WatchStream.Close()
	}
}
