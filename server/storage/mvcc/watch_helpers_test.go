package mvcc

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

// waitLimit bounds every wait of the watch tests.
const waitLimit = 20 * time.Second

// watchSpec is a watcher as tests write it: end "" is the single key,
// "\x00" every key from key on.
type watchSpec struct {
	key, end string
	start    int64
	fcs      []FilterFunc
}

// holds is the test's own idea of the range, independent of watcher.holds.
func (sp watchSpec) holds(key string) bool {
	switch sp.end {
	case "":
		return key == sp.key
	case "\x00":
		return key >= sp.key
	}
	return key >= sp.key && key < sp.end
}

func (sp watchSpec) wants(ev *mvccpb.Event) bool {
	if !sp.holds(string(ev.Kv.Key)) || ev.Kv.ModRevision < sp.start {
		return false
	}
	for _, f := range sp.fcs {
		if f(ev) {
			return false
		}
	}
	return true
}

func mustWatch(t *testing.T, ws WatchStream, sp watchSpec) WatchID {
	t.Helper()
	id, err := ws.Watch(AutoWatchID, []byte(sp.key), rangeEnd(sp.end), sp.start, sp.fcs...)
	if err != nil {
		t.Fatalf("Watch(%+v): %v", sp, err)
	}
	return id
}

// history records every write's events, as the writers saw them.
type historyLog struct {
	mu    sync.Mutex
	byRev map[int64][]*mvccpb.Event
}

func newHistoryLog() *historyLog { return &historyLog{byRev: make(map[int64][]*mvccpb.Event)} }

// op is one change of a test transaction: a put, or a delete if del.
type op struct {
	key, value string
	del        bool
}

// write runs ops in one write transaction and records their events: puts
// from the transaction's KeyValues, deletions built from the op itself.
func (h *historyLog) write(s *Store, ops ...op) int64 {
	txn := s.Write()
	rev := txn.Rev() + 1
	var evs []*mvccpb.Event
	for _, o := range ops {
		if o.del {
			if n, _ := txn.DeleteRange([]byte(o.key), nil); n == 1 {
				evs = append(evs, &mvccpb.Event{Type: mvccpb.Event_DELETE,
					Kv: &mvccpb.KeyValue{Key: []byte(o.key), ModRevision: rev}})
			}
			continue
		}
		txn.Put([]byte(o.key), []byte(o.value), 0)
		changes := txn.Changes()
		evs = append(evs, &mvccpb.Event{Kv: proto.Clone(changes[len(changes)-1]).(*mvccpb.KeyValue)})
	}
	txn.End()
	if len(evs) > 0 {
		h.mu.Lock()
		h.byRev[rev] = evs
		h.mu.Unlock()
	}
	return rev
}

// expected returns the events sp should receive, in revision order.
func (h *historyLog) expected(sp watchSpec) []*mvccpb.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	revs := make([]int64, 0, len(h.byRev))
	for rev := range h.byRev {
		revs = append(revs, rev)
	}
	sort.Slice(revs, func(i, j int) bool { return revs[i] < revs[j] })
	var out []*mvccpb.Event
	for _, rev := range revs {
		for _, ev := range h.byRev[rev] {
			if sp.wants(ev) {
				out = append(out, ev)
			}
		}
	}
	return out
}

// nextResponse waits (bounded) for the next response of ch.
func nextResponse(t *testing.T, ch <-chan WatchResponse) WatchResponse {
	t.Helper()
	select {
	case resp, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return resp
	case <-time.After(waitLimit):
		t.Fatal("no watch response in time")
	}
	return WatchResponse{}
}

// collectUntil reads ch until every watcher in until has received an event
// at or after its revision, and returns the responses per watcher.
func collectUntil(t *testing.T, ch <-chan WatchResponse, until map[WatchID]int64) map[WatchID][]WatchResponse {
	t.Helper()
	got := make(map[WatchID][]WatchResponse)
	pending := len(until)
	for pending > 0 {
		resp := nextResponse(t, ch)
		got[resp.WatchID] = append(got[resp.WatchID], resp)
		target, ok := until[resp.WatchID]
		if n := len(resp.Events); ok && n > 0 && resp.Events[n-1].Kv.ModRevision >= target {
			delete(until, resp.WatchID)
			pending--
		}
	}
	return got
}

// checkDelivery verifies the watch guarantees for one watcher's responses:
// exactly the expected events in order (ordered, unique, reliable), every
// revision inside one response (atomic) and a Revision covering its events.
func checkDelivery(t *testing.T, name string, resps []WatchResponse, want []*mvccpb.Event) {
	t.Helper()
	var got []*mvccpb.Event
	seenIn := make(map[int64]int)
	for i, resp := range resps {
		for _, ev := range resp.Events {
			rev := ev.Kv.ModRevision
			if j, ok := seenIn[rev]; ok && j != i {
				t.Fatalf("%s: revision %d split over responses %d and %d", name, rev, j, i)
			}
			seenIn[rev] = i
			if rev > resp.Revision {
				t.Fatalf("%s: event at %d in a response with Revision %d", name, rev, resp.Revision)
			}
		}
		got = append(got, resp.Events...)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d:\n got %v\nwant %v", name, len(got), len(want), evString(got), evString(want))
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Fatalf("%s: event %d = %v, want %v", name, i, evString(got[i:i+1]), evString(want[i:i+1]))
		}
	}
}

func evString(evs []*mvccpb.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = fmt.Sprintf("%s %s", ev.Type, kvString([]*mvccpb.KeyValue{ev.Kv})[0])
	}
	return out
}

// watcherOf returns the watcher behind id.
func watcherOf(ws WatchStream, id WatchID) *watcher {
	s := ws.(*watchStream)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watchers.get(id)
}

// stateOf reads a watcher's state under the hub's lock.
func stateOf(s *Store, w *watcher) watcherState {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return w.state
}

// waitState waits (bounded) until w is in state want.
func waitState(t *testing.T, s *Store, w *watcher, want watcherState) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for stateOf(s, w) != want {
		if time.Now().After(deadline) {
			t.Fatalf("watcher %d in state %d, want %d", w.id, stateOf(s, w), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// holdWatchSync stops (or resumes) the hub's background work.
func holdWatchSync(s *Store, held bool) {
	s.watch.mu.Lock()
	s.watch.held = held
	s.watch.mu.Unlock()
	s.watch.wake()
}

func setWatchBatchLimit(s *Store, n int) {
	s.watch.mu.Lock()
	s.watch.batchLimit = n
	s.watch.mu.Unlock()
}

// hubSizes reports how many watchers each group of the hub holds.
func hubSizes(s *Store) (synced, unsynced, victims int) {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return s.watch.synced.size, len(s.watch.unsynced), len(s.watch.victims)
}

func put(key, value string) op { return op{key: key, value: value} }
func del(key string) op        { return op{key: key, del: true} }

// notBare reports whether resp differs from want, an event-less response.
func notBare(resp, want WatchResponse) bool {
	return len(resp.Events) != 0 || resp.WatchID != want.WatchID ||
		resp.Revision != want.Revision || resp.CompactRevision != want.CompactRevision
}
