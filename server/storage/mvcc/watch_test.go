package mvcc

import (
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// concurrentSpecs are the watchers of the delivery tests: every kind of
// range, live and from history.
var concurrentSpecs = []watchSpec{
	{key: "k3"},
	{key: "k", end: "l"},
	{key: "k5", end: "\x00"},
	{key: "k2", end: "k6"},
	{key: "", end: "\x00", start: 1},
	{key: "k1", end: "k8", start: 2},
}

// writeRandomly runs txns transactions of one to three random puts and
// deletes on keys k0..k9.
func writeRandomly(s *Store, hist *historyLog, seed int64, txns int) {
	rng := rand.New(rand.NewSource(seed))
	for i := range txns {
		ops := make([]op, 1+rng.Intn(3))
		for j := range ops {
			key := fmt.Sprintf("k%d", rng.Intn(10))
			if rng.Intn(4) == 0 {
				ops[j] = del(key)
			} else {
				ops[j] = put(key, fmt.Sprintf("%d-%d-%d", seed, i, j))
			}
		}
		hist.write(s, ops...)
	}
}

// sentinel writes one txn every spec of concurrentSpecs sees and returns its revision.
func sentinel(s *Store, hist *historyLog) int64 {
	return hist.write(s, put("k3", "end"), put("k5", "end"))
}

// TestWatchDeliveryUnderConcurrentWrites: with a one-response channel and a
// slow reader, every watcher receives exactly the history of its range, in
// order, each revision in one response.
func TestWatchDeliveryUnderConcurrentWrites(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	setWatchBatchLimit(s, 5)
	hist := newHistoryLog()
	ws := s.newWatchStream(1)
	defer ws.Close()
	ids := make(map[WatchID]watchSpec)
	for _, sp := range concurrentSpecs {
		ids[mustWatch(t, ws, sp)] = sp
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			writeRandomly(s, hist, int64(w), 150)
		}()
	}
	writersDone := make(chan map[WatchID]int64)
	go func() {
		wg.Wait()
		end := sentinel(s, hist)
		until := make(map[WatchID]int64)
		for id := range ids {
			until[id] = end
		}
		writersDone <- until
	}()
	got := slowlyCollect(t, ws.Chan(), writersDone)
	for id, sp := range ids {
		checkDelivery(t, fmt.Sprintf("watch %+v", sp), got[id], hist.expected(sp))
	}
}

// slowlyCollect reads ch, yielding between reads, while the writers run;
// once they are done it reads on until every watcher reached its revision.
func slowlyCollect(t *testing.T, ch <-chan WatchResponse, writersDone <-chan map[WatchID]int64) map[WatchID][]WatchResponse {
	got := make(map[WatchID][]WatchResponse)
	deadline := time.After(waitLimit)
	for {
		select {
		case resp := <-ch:
			got[resp.WatchID] = append(got[resp.WatchID], resp)
			runtime.Gosched()
		case until := <-writersDone:
			for id, resps := range collectUntil(t, ch, until) {
				got[id] = append(got[id], resps...)
			}
			return got
		case <-deadline:
			t.Fatal("writers did not finish in time")
		}
	}
}

// TestWatchWritersNeverBlockOnStuckConsumer: nobody reads the channel while
// thousands of writes go through; afterwards the reader still gets
// everything, from the kept responses and the backend.
func TestWatchWritersNeverBlockOnStuckConsumer(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	setWatchBatchLimit(s, 50)
	hist := newHistoryLog()
	ws := s.newWatchStream(1)
	defer ws.Close()
	ids := make(map[WatchID]watchSpec)
	for _, sp := range concurrentSpecs {
		ids[mustWatch(t, ws, sp)] = sp
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		writeRandomly(s, hist, 42, 3000)
	}()
	select {
	case <-finished:
	case <-time.After(waitLimit):
		t.Fatal("writes blocked on a watcher nobody reads")
	}
	end := sentinel(s, hist)
	until := make(map[WatchID]int64)
	for id := range ids {
		until[id] = end
	}
	got := collectUntil(t, ws.Chan(), until)
	for id, sp := range ids {
		checkDelivery(t, fmt.Sprintf("watch %+v", sp), got[id], hist.expected(sp))
	}
}

// TestWatchRevisionInOneResponse: a transaction's events arrive together,
// live and when read back from history in batches smaller than the txn.
func TestWatchRevisionInOneResponse(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	setWatchBatchLimit(s, 2)
	hist := newHistoryLog()
	hist.write(s, put("a", "0"))
	ws := s.NewWatchStream()
	defer ws.Close()
	live := mustWatch(t, ws, watchSpec{key: "", end: "\x00"})
	txn := []op{put("a", "1"), put("b", "1"), del("a"), put("c", "1"), put("a", "2")}
	rev := hist.write(s, txn...)
	resp := nextResponse(t, ws.Chan())
	if resp.WatchID != live || resp.Revision != rev || len(resp.Events) != len(txn) {
		t.Fatalf("live response %+v, want watch %d, revision %d, %d events", resp, live, rev, len(txn))
	}
	for _, start := range []int64{2, rev} {
		id := mustWatch(t, ws, watchSpec{key: "", end: "\x00", start: start})
		got := collectUntil(t, ws.Chan(), map[WatchID]int64{id: rev})
		checkDelivery(t, fmt.Sprintf("history from %d", start), got[id], hist.expected(watchSpec{key: "", end: "\x00", start: start}))
	}
}

// TestWatchHistory: a watch from an old revision replays the history of
// its range from there, then goes on live.
func TestWatchHistory(t *testing.T) {
	specs := []watchSpec{
		{key: "k3", start: 2},
		{key: "k3", start: 40},
		{key: "k", end: "l", start: 2},
		{key: "k5", end: "\x00", start: 30},
		{key: "k2", end: "k6", start: 77},
		{key: "k2", end: "k6", fcs: []FilterFunc{noPut}, start: 2},
	}
	for _, sp := range specs {
		t.Run(fmt.Sprintf("%q-%q@%d", sp.key, sp.end, sp.start), func(t *testing.T) {
			s, _, _ := newTestStore(t, testConfig)
			setWatchBatchLimit(s, 7)
			hist := newHistoryLog()
			writeRandomly(s, hist, 7, 100)
			ws := s.NewWatchStream()
			defer ws.Close()
			id := mustWatch(t, ws, sp)
			writeRandomly(s, hist, 8, 20)
			sentinel(s, hist)
			want := hist.expected(sp)
			got := collectUntil(t, ws.Chan(), map[WatchID]int64{id: want[len(want)-1].Kv.ModRevision})
			checkDelivery(t, "history", got[id], want)
		})
	}
}

func noPut(e *mvccpb.Event) bool    { return e.Type == mvccpb.Event_PUT }
func noDelete(e *mvccpb.Event) bool { return e.Type == mvccpb.Event_DELETE }

// TestWatchFilters: filtered events never arrive; a revision left empty by
// the filters sends nothing.
func TestWatchFilters(t *testing.T) {
	tests := []struct {
		name string
		fcs  []FilterFunc
		want []string
	}{
		{"none", nil, []string{"PUT a", "PUT b", "DELETE a", "PUT a"}},
		{"no put", []FilterFunc{noPut}, []string{"DELETE a"}},
		{"no delete", []FilterFunc{noDelete}, []string{"PUT a", "PUT b", "PUT a"}},
		{"no put, no delete", []FilterFunc{noPut, noDelete}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, _ := newTestStore(t, testConfig)
			ws := s.NewWatchStream()
			defer ws.Close()
			id := mustWatch(t, ws, watchSpec{key: "a", end: "c", fcs: tt.fcs})
			marker := mustWatch(t, ws, watchSpec{key: "z"})
			s.Put([]byte("a"), nil, 0)
			s.Put([]byte("b"), nil, 0)
			s.DeleteRange([]byte("a"), nil)
			s.Put([]byte("a"), nil, 0)
			end := s.Put([]byte("z"), nil, 0)
			got := collectUntil(t, ws.Chan(), map[WatchID]int64{marker: end})
			var names []string
			for _, resp := range got[id] {
				for _, ev := range resp.Events {
					names = append(names, ev.Type.String()+" "+string(ev.Kv.Key))
				}
			}
			if fmt.Sprint(names) != fmt.Sprint(tt.want) {
				t.Fatalf("events %v, want %v", names, tt.want)
			}
		})
	}
}

// TestWatchRanges: single key, prefix, from-key and range watchers see
// exactly their keys.
func TestWatchRanges(t *testing.T) {
	keys := []string{"a", "ab", "abc", "b", "ba", "c", "\xff"}
	tests := []struct {
		key, end string
		want     []string
	}{
		{"ab", "", []string{"ab"}},
		{"ab", "ac", []string{"ab", "abc"}},
		{"b", "\x00", []string{"b", "ba", "c", "\xff"}},
		{"", "\x00", keys},
		{"ab", "c", []string{"ab", "abc", "b", "ba"}},
		{"\xff", "", []string{"\xff"}},
	}
	s, _, _ := newTestStore(t, testConfig)
	ws := s.NewWatchStream()
	defer ws.Close()
	ids := make([]WatchID, len(tests))
	for i, tt := range tests {
		ids[i] = mustWatch(t, ws, watchSpec{key: tt.key, end: tt.end})
	}
	marker := mustWatch(t, ws, watchSpec{key: "zz"})
	for _, k := range keys {
		s.Put([]byte(k), nil, 0)
	}
	got := collectUntil(t, ws.Chan(), map[WatchID]int64{marker: s.Put([]byte("zz"), nil, 0)})
	for i, tt := range tests {
		var seen []string
		for _, resp := range got[ids[i]] {
			for _, ev := range resp.Events {
				if string(ev.Kv.Key) != "zz" {
					seen = append(seen, string(ev.Kv.Key))
				}
			}
		}
		if fmt.Sprint(seen) != fmt.Sprint(tt.want) {
			t.Errorf("watch [%q, %q): keys %q, want %q", tt.key, tt.end, seen, tt.want)
		}
	}
}

// TestWatchFromCompactedRevision: a start below the compacted revision
// gets one compaction response and nothing more; the compacted revision
// itself is still watchable.
func TestWatchFromCompactedRevision(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	hist := newHistoryLog()
	for i := range 8 {
		hist.write(s, put("k", fmt.Sprint(i)))
	}
	done, err := s.Compact(5)
	if err != nil {
		t.Fatal(err)
	}
	waitCompaction(t, done)
	ws := s.NewWatchStream()
	defer ws.Close()
	old := mustWatch(t, ws, watchSpec{key: "k", start: 4})
	if resp := nextResponse(t, ws.Chan()); notBare(resp, WatchResponse{WatchID: old, CompactRevision: 5}) {
		t.Fatalf("response %+v, want compaction at 5 for watch %d", resp, old)
	}
	if st := stateOf(s, watcherOf(ws, old)); st != stateDone {
		t.Fatalf("compacted watcher in state %d", st)
	}
	at := mustWatch(t, ws, watchSpec{key: "k", start: 5})
	end := hist.write(s, put("k", "last"))
	got := collectUntil(t, ws.Chan(), map[WatchID]int64{at: end})
	checkDelivery(t, "from the compacted revision", got[at], hist.expected(watchSpec{key: "k", start: 5}))
	if len(got[old]) != 0 {
		t.Fatalf("compacted watcher got %+v", got[old])
	}
}

// TestWatchCompactedWhileCatchingUp: a watcher stuck behind its full
// channel gets its kept batch, then the compaction response.
func TestWatchCompactedWhileCatchingUp(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	setWatchBatchLimit(s, 2)
	hist := newHistoryLog()
	for i := range 10 {
		hist.write(s, put("k", fmt.Sprint(i)))
	}
	ws := s.newWatchStream(1)
	defer ws.Close()
	filler := mustWatch(t, ws, watchSpec{key: "f"})
	s.Put([]byte("f"), nil, 0) // fills the channel
	slow := mustWatch(t, ws, watchSpec{key: "k", start: 2})
	waitState(t, s, watcherOf(ws, slow), stateVictim)
	done, err := s.Compact(8)
	if err != nil {
		t.Fatal(err)
	}
	waitCompaction(t, done)
	if resp := nextResponse(t, ws.Chan()); resp.WatchID != filler {
		t.Fatalf("first response %+v, want the filler's", resp)
	}
	batch := nextResponse(t, ws.Chan())
	checkDelivery(t, "kept batch", []WatchResponse{batch}, hist.expected(watchSpec{key: "k", start: 2})[:2])
	if resp := nextResponse(t, ws.Chan()); notBare(resp, WatchResponse{WatchID: slow, CompactRevision: 8}) {
		t.Fatalf("response %+v, want compaction at 8", resp)
	}
}

// TestWatchResume: a new watch from the last seen revision + 1 continues
// exactly where the old one stopped.
func TestWatchResume(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	hist := newHistoryLog()
	sp := watchSpec{key: "k", end: "l"}
	ws := s.NewWatchStream()
	defer ws.Close()
	first := mustWatch(t, ws, sp)
	writeRandomly(s, hist, 1, 30)
	mid := sentinel(s, hist)
	before := collectUntil(t, ws.Chan(), map[WatchID]int64{first: mid})[first]
	if err := ws.Cancel(first); err != nil {
		t.Fatal(err)
	}
	writeRandomly(s, hist, 2, 30)
	last := before[len(before)-1].Events
	sp.start = last[len(last)-1].Kv.ModRevision + 1
	second := mustWatch(t, ws, sp)
	end := sentinel(s, hist)
	after := collectUntil(t, ws.Chan(), map[WatchID]int64{second: end})[second]
	checkDelivery(t, "resumed", append(before, after...), hist.expected(watchSpec{key: "k", end: "l"}))
}

// TestWatchCancel: a canceled watcher gets nothing more; unknown IDs fail.
func TestWatchCancel(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	ws := s.NewWatchStream()
	defer ws.Close()
	gone := mustWatch(t, ws, watchSpec{key: "a"})
	marker := mustWatch(t, ws, watchSpec{key: "m"})
	if err := ws.Cancel(gone); err != nil {
		t.Fatal(err)
	}
	s.Put([]byte("a"), nil, 0)
	s.Put([]byte("m"), nil, 0)
	if resp := nextResponse(t, ws.Chan()); resp.WatchID != marker {
		t.Fatalf("canceled watcher got %+v", resp)
	}
	for _, id := range []WatchID{gone, 99} {
		if err := ws.Cancel(id); !errors.Is(err, ErrWatcherNotExist) {
			t.Fatalf("Cancel(%d) = %v, want ErrWatcherNotExist", id, err)
		}
	}
}

// TestWatchStreamClose: Close ends the channel and leaves no watcher in the
// hub, whatever state they were in; goleak (TestMain) checks goroutines.
func TestWatchStreamClose(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	for i := range 5 {
		s.Put([]byte("k"), []byte(fmt.Sprint(i)), 0)
	}
	ws := s.newWatchStream(1)
	mustWatch(t, ws, watchSpec{key: "k"})
	mustWatch(t, ws, watchSpec{key: "k", start: 2})
	mustWatch(t, ws, watchSpec{key: "", end: "\x00", start: 3})
	s.Put([]byte("k"), nil, 0)
	ws.Close()
	ws.Close()
	for range ws.Chan() {
	}
	if a, b, c := hubSizes(s); a+b+c != 0 {
		t.Fatalf("after Close: %d synced, %d unsynced, %d victims", a, b, c)
	}
	if _, err := ws.Watch(AutoWatchID, []byte("k"), nil, 0); !errors.Is(err, ErrWatchStreamClosed) {
		t.Fatalf("Watch after Close = %v", err)
	}
	if err := ws.Cancel(0); !errors.Is(err, ErrWatcherNotExist) {
		t.Fatalf("Cancel after Close = %v", err)
	}
	s.Put([]byte("k"), nil, 0) // no send on the closed channel
}

// TestWatchProgress: only a synced watcher that does not start in the
// future gets a progress response, with the current revision.
func TestWatchProgress(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	for i := range 5 {
		s.Put([]byte("k"), []byte(fmt.Sprint(i)), 0)
	}
	ws := s.NewWatchStream()
	defer ws.Close()
	synced := mustWatch(t, ws, watchSpec{key: "k"})
	future := mustWatch(t, ws, watchSpec{key: "k", start: 100})
	holdWatchSync(s, true)
	behind := mustWatch(t, ws, watchSpec{key: "k", start: 2})
	for _, id := range []WatchID{future, behind, 77, synced} {
		ws.RequestProgress(id)
	}
	if resp := nextResponse(t, ws.Chan()); notBare(resp, WatchResponse{WatchID: synced, Revision: s.Rev()}) {
		t.Fatalf("progress %+v, want watch %d at %d only", resp, synced, s.Rev())
	}
	if ws.RequestProgressAll() {
		t.Fatal("RequestProgressAll reported success with unsynced watchers")
	}
	for _, id := range []WatchID{future, behind} {
		if err := ws.Cancel(id); err != nil {
			t.Fatal(err)
		}
	}
	holdWatchSync(s, false)
	if !ws.RequestProgressAll() {
		t.Fatal("RequestProgressAll failed with only synced watchers")
	}
	if resp := nextResponse(t, ws.Chan()); notBare(resp, WatchResponse{WatchID: ProgressAllWatchID, Revision: s.Rev()}) {
		t.Fatalf("progress-all %+v", resp)
	}
}

// TestWatchIDsAndArguments: IDs count from 0 per stream and skip client
// IDs; bad arguments are refused.
func TestWatchIDsAndArguments(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	ws := s.NewWatchStream()
	defer ws.Close()
	calls := []struct {
		id       WatchID
		key, end string
		start    int64
		wantID   WatchID
		wantErr  error
	}{
		{AutoWatchID, "a", "", 0, 0, nil},
		{2, "a", "", 0, 2, nil},
		{AutoWatchID, "a", "", 0, 1, nil},
		{AutoWatchID, "a", "", 0, 3, nil},
		{2, "b", "", 0, -1, ErrWatcherDuplicateID},
		{AutoWatchID, "b", "a", 0, -1, ErrEmptyWatcherRange},
		{AutoWatchID, "b", "b", 0, -1, ErrEmptyWatcherRange},
		{AutoWatchID, "b", "", -1, -1, ErrNegativeStartRev},
		{AutoWatchID, "b", "\x00", 0, 4, nil},
	}
	for _, c := range calls {
		id, err := ws.Watch(c.id, []byte(c.key), rangeEnd(c.end), c.start)
		if id != c.wantID || !errors.Is(err, c.wantErr) {
			t.Errorf("Watch(%d, %q, %q, %d) = %d, %v; want %d, %v", c.id, c.key, c.end, c.start, id, err, c.wantID, c.wantErr)
		}
	}
	if ws.Rev() != s.Rev() {
		t.Fatalf("stream Rev %d, store %d", ws.Rev(), s.Rev())
	}
}

// TestWatchStartsRightAfterStoreRevision: a watcher from "now" misses no
// revision after the store revision read once Watch returned, even while a
// writer changes the key at every revision.
func TestWatchStartsRightAfterStoreRevision(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				s.Put([]byte("k"), nil, 0)
			}
		}
	}()
	defer wg.Wait()
	defer close(stop)
	ws := s.NewWatchStream()
	defer ws.Close()
	for range 200 {
		id := mustWatch(t, ws, watchSpec{key: "k"})
		rev := ws.Rev()
		resp := nextResponse(t, ws.Chan())
		if got := resp.Events[0].Kv.ModRevision; resp.WatchID != id || got > rev+1 {
			t.Fatalf("watch %d created at revision %d: first event at %d (watch %d)", id, rev, got, resp.WatchID)
		}
		if err := ws.Cancel(id); err != nil {
			t.Fatal(err)
		}
		for len(ws.Chan()) > 0 { // responses sent before the cancel
			<-ws.Chan()
		}
	}
}
