package v3rpc

import (
	"fmt"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// quiet is how long a test waits to be sure no response comes.
const quiet = 200 * time.Millisecond

// eventsOf renders events as "PUT a=1@2" / "DELETE a@3", with " prev=v"
// when the event has a previous value.
func eventsOf(evs []*mvccpb.Event) string {
	parts := make([]string, len(evs))
	for i, ev := range evs {
		s := fmt.Sprintf("%s %s", ev.Type, ev.Kv.Key)
		if ev.Type == mvccpb.Event_PUT {
			s += "=" + string(ev.Kv.Value)
		}
		s += fmt.Sprintf("@%d", ev.Kv.ModRevision)
		if ev.PrevKv != nil {
			s += " prev=" + string(ev.PrevKv.Value)
		}
		parts[i] = s
	}
	return strings.Join(parts, ",")
}

// wantEvents reads the next response and checks it is an events response
// of watcher id with events want and header revision rev.
func (w *testWatch) wantEvents(id int64, rev int64, want string) {
	w.t.Helper()
	resp := w.next()
	if resp.WatchId != id || resp.Created || resp.Canceled || resp.Header.GetRevision() != rev {
		w.t.Fatalf("response %v, want events of watcher %d at revision %d", resp, id, rev)
	}
	if got := eventsOf(resp.Events); got != want {
		w.t.Fatalf("events of watcher %d = %q, want %q", id, got, want)
	}
}

// collect reads responses of watcher id until it has n events. History
// may come in one response or in several of whole revisions; the header
// revision of each is at least that of its last event.
func (w *testWatch) collect(id int64, n int) []*mvccpb.Event {
	w.t.Helper()
	var evs []*mvccpb.Event
	for len(evs) < n {
		resp := w.next()
		if resp.WatchId != id || len(resp.Events) == 0 {
			w.t.Fatalf("got %v, want events of watcher %d", resp, id)
		}
		if last := resp.Events[len(resp.Events)-1].Kv.ModRevision; resp.Header.GetRevision() < last {
			w.t.Fatalf("response at header revision %d holds revision %d", resp.Header.GetRevision(), last)
		}
		evs = append(evs, resp.Events...)
	}
	return evs
}

func TestWatchCreateAndLiveEvents(t *testing.T) {
	f, conn := newWatchFake(t, Config{})
	f.put("a", "0")
	w := openWatch(t, conn)

	w.send(createReq(&pb.WatchCreateRequest{Key: []byte("a")}))
	created := w.next()
	wantHeader := &pb.ResponseHeader{ClusterId: fakeClusterID, MemberId: fakeMemberID, Revision: 2, RaftTerm: fakeTerm}
	if !created.Created || created.Canceled || created.WatchId != 0 || !proto.Equal(created.Header, wantHeader) {
		t.Fatalf("created = %v, want created watcher 0 with header %v", created, wantHeader)
	}
	f.put("b", "x")
	f.put("a", "1")
	f.del("a")
	w.wantEvents(0, 4, "PUT a=1@4")
	w.wantEvents(0, 5, "DELETE a@5")
	w.none(quiet)
}

func TestWatchRanges(t *testing.T) {
	tests := []struct {
		name     string
		key, end string
		want     string
	}{
		{name: "single key", key: "foo", want: "PUT foo=1@2"},
		{name: "range", key: "foo", end: "fop", want: "PUT foo=1@2,PUT foo/a=2@2"},
		{name: "prefix", key: "foo/", end: "foo0", want: "PUT foo/a=2@2"},
		{name: "from key", key: "foo/", end: "\x00", want: "PUT foo/a=2@2,PUT zoo=3@2"},
		{name: "all keys", key: "\x00", end: "\x00", want: "PUT foo=1@2,PUT foo/a=2@2,PUT zoo=3@2"},
		{name: "empty key is \\x00", key: "", end: "\x00", want: "PUT foo=1@2,PUT foo/a=2@2,PUT zoo=3@2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, conn := newWatchFake(t, Config{})
			w := openWatch(t, conn)
			id := w.create(&pb.WatchCreateRequest{Key: []byte(tt.key), RangeEnd: []byte(tt.end)})
			f.put("foo", "1", "foo/a", "2", "zoo", "3")
			w.wantEvents(id, 2, tt.want)
		})
	}
}

func TestWatchHistory(t *testing.T) {
	f, conn := newWatchFake(t, Config{})
	f.put("k", "1")           // 2
	f.put("k", "2", "j", "x") // 3
	f.del("k")                // 4
	w := openWatch(t, conn)
	w.send(createReq(&pb.WatchCreateRequest{Key: []byte("k"), StartRevision: 3}))
	if created := w.next(); !created.Created || created.Header.Revision != 4 {
		t.Fatalf("created = %v, want created at revision 4", created)
	}
	if got := eventsOf(w.collect(0, 2)); got != "PUT k=2@3,DELETE k@4" {
		t.Fatalf("history = %q", got)
	}
	f.put("k", "3")
	w.wantEvents(0, 5, "PUT k=3@5")
}

// TestWatchCreatedBeforeEvents: a watcher with a long history sees its
// "created" response before any of its events.
func TestWatchCreatedBeforeEvents(t *testing.T) {
	f, conn := newWatchFake(t, Config{})
	for i := range 300 {
		f.put("k", fmt.Sprint(i))
	}
	w := openWatch(t, conn)
	for i := range 5 {
		w.send(createReq(&pb.WatchCreateRequest{Key: []byte("k"), StartRevision: 1}))
		seen := map[int64]bool{}
		for n := 0; n < 300; {
			resp := w.next()
			switch {
			case resp.Created:
				seen[resp.WatchId] = true
			case !seen[resp.WatchId]:
				t.Fatalf("round %d: events of watcher %d before its created response", i, resp.WatchId)
			case resp.WatchId == int64(i):
				n += len(resp.Events)
			}
		}
	}
}

func TestWatchPrevKV(t *testing.T) {
	f, conn := newWatchFake(t, Config{})
	w := openWatch(t, conn)
	withPrev := w.create(&pb.WatchCreateRequest{Key: []byte("a"), PrevKv: true})
	plain := w.create(&pb.WatchCreateRequest{Key: []byte("a")})
	f.put("a", "1")
	f.put("a", "2")
	f.del("a")
	f.put("a", "3")
	want := map[int64][]string{
		withPrev: {"PUT a=1@2", "PUT a=2@3 prev=1", "DELETE a@4 prev=2", "PUT a=3@5"},
		plain:    {"PUT a=1@2", "PUT a=2@3", "DELETE a@4", "PUT a=3@5"},
	}
	got := map[int64][]string{}
	for range 8 {
		resp := w.next()
		got[resp.WatchId] = append(got[resp.WatchId], eventsOf(resp.Events))
	}
	for id, evs := range want {
		if strings.Join(got[id], ",") != strings.Join(evs, ",") {
			t.Errorf("watcher %d: events %q, want %q", id, got[id], evs)
		}
	}
}

func TestWatchFilters(t *testing.T) {
	f, conn := newWatchFake(t, Config{})
	w := openWatch(t, conn)
	noPut := w.create(&pb.WatchCreateRequest{Key: []byte("a"), Filters: []pb.WatchCreateRequest_FilterType{pb.WatchCreateRequest_NOPUT}})
	f.put("a", "1")
	f.del("a")
	w.wantEvents(noPut, 3, "DELETE a@3")
	noDel := w.create(&pb.WatchCreateRequest{Key: []byte("b"), Filters: []pb.WatchCreateRequest_FilterType{pb.WatchCreateRequest_NODELETE}})
	f.put("b", "1")
	f.del("b")
	f.put("b", "2")
	w.wantEvents(noDel, 4, "PUT b=1@4")
	w.wantEvents(noDel, 6, "PUT b=2@6")
	w.none(quiet)
}

func TestWatchCancel(t *testing.T) {
	f, conn := newWatchFake(t, Config{})
	w := openWatch(t, conn)
	id := w.create(&pb.WatchCreateRequest{Key: []byte("a")})
	other := w.create(&pb.WatchCreateRequest{Key: []byte("b")})
	f.put("a", "1")
	w.wantEvents(id, 2, "PUT a=1@2")

	w.send(cancelReq(id))
	resp := w.next()
	if !resp.Canceled || resp.Created || resp.WatchId != id || resp.Header.GetRevision() != 2 || resp.CancelReason != "" {
		t.Fatalf("cancel answered %v, want canceled watcher %d at revision 2", resp, id)
	}
	f.put("a", "2")
	w.send(cancelReq(id)) // no longer exists
	w.send(cancelReq(42)) // never existed
	f.put("b", "1")
	w.wantEvents(other, 4, "PUT b=1@4")
	w.none(quiet)
}

func TestWatchCreateRefused(t *testing.T) {
	f, conn := newWatchFake(t, Config{})
	f.put("a", "1")
	w := openWatch(t, conn)
	w.create(&pb.WatchCreateRequest{Key: []byte("a"), WatchId: 7})
	tests := []struct {
		name   string
		cr     *pb.WatchCreateRequest
		reason string
	}{
		{name: "negative start revision", cr: &pb.WatchCreateRequest{Key: []byte("a"), StartRevision: -1}, reason: rpctypes.ErrCompacted.Error()},
		{name: "duplicate watch id", cr: &pb.WatchCreateRequest{Key: []byte("a"), WatchId: 7}, reason: "mvcc: duplicate watch ID provided on the WatchStream"},
		{name: "empty range", cr: &pb.WatchCreateRequest{Key: []byte("b"), RangeEnd: []byte("a")}, reason: "mvcc: watcher range is empty"},
	}
	for _, tt := range tests {
		w.send(createReq(tt.cr))
		resp := w.next()
		if !resp.Created || !resp.Canceled || resp.WatchId != -1 || resp.CancelReason != tt.reason || resp.Header.GetRevision() != 2 {
			t.Errorf("%s: got %v, want created+canceled watcher -1 at revision 2 with reason %q", tt.name, resp, tt.reason)
		}
	}
}

// TestWatchIDs: the client may choose IDs; automatic ones skip those in
// use, and an ID in use is refused.
func TestWatchIDs(t *testing.T) {
	_, conn := newWatchFake(t, Config{})
	w := openWatch(t, conn)
	got := []int64{
		w.create(&pb.WatchCreateRequest{Key: []byte("a")}),
		w.create(&pb.WatchCreateRequest{Key: []byte("a"), WatchId: 2}),
		w.create(&pb.WatchCreateRequest{Key: []byte("a")}),
		w.create(&pb.WatchCreateRequest{Key: []byte("a")}),
	}
	if fmt.Sprint(got) != "[0 2 1 3]" {
		t.Fatalf("watch ids %v, want [0 2 1 3]", got)
	}
	w.send(createReq(&pb.WatchCreateRequest{Key: []byte("a"), WatchId: 1}))
	if resp := w.next(); !resp.Canceled || resp.WatchId != -1 {
		t.Fatalf("ID in use: got %v, want refusal", resp)
	}
}

// TestWatchManyWatchers multiplexes watchers on one stream: each gets its
// own events under its own ID.
func TestWatchManyWatchers(t *testing.T) {
	f, conn := newWatchFake(t, Config{})
	w := openWatch(t, conn)
	const n = 50
	for i := range n {
		if id := w.create(&pb.WatchCreateRequest{Key: []byte(fmt.Sprintf("k%02d", i))}); id != int64(i) {
			t.Fatalf("watcher %d got id %d", i, id)
		}
	}
	for i := range n {
		f.put(fmt.Sprintf("k%02d", i), fmt.Sprint(i))
	}
	for i := range n {
		w.wantEvents(int64(i), int64(i+2), fmt.Sprintf("PUT k%02d=%d@%d", i, i, i+2))
	}
}

func TestWatchCompacted(t *testing.T) {
	f, conn := newWatchFake(t, Config{})
	for i := range 5 {
		f.put("a", fmt.Sprint(i)) // revisions 2..6
	}
	done, err := f.kv.Compact(4)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	w := openWatch(t, conn)
	id := w.create(&pb.WatchCreateRequest{Key: []byte("a"), StartRevision: 3})
	resp := w.next()
	if resp.WatchId != id || !resp.Canceled || resp.CompactRevision != 4 || resp.Header.GetRevision() != 0 || len(resp.Events) != 0 {
		t.Fatalf("got %v, want canceled watcher %d with compact revision 4 and header revision 0", resp, id)
	}
	f.put("a", "x")
	w.none(quiet)
	// etcd keeps the compacted watcher until the client cancels it.
	w.send(cancelReq(id))
	if resp := w.next(); !resp.Canceled || resp.WatchId != id || resp.CompactRevision != 0 {
		t.Fatalf("cancel answered %v", resp)
	}
	// The compacted revision itself is still readable.
	id = w.create(&pb.WatchCreateRequest{Key: []byte("a"), StartRevision: 4})
	if got := eventsOf(w.collect(id, 4)); got != "PUT a=2@4,PUT a=3@5,PUT a=4@6,PUT a=x@7" {
		t.Fatalf("history from the compacted revision = %q", got)
	}
}

func TestWatchProgressRequest(t *testing.T) {
	f, conn := newWatchFake(t, Config{})
	f.put("a", "1")
	w := openWatch(t, conn)
	w.send(progressReq())
	w.none(quiet) // no watchers: no answer

	ahead := w.create(&pb.WatchCreateRequest{Key: []byte("a"), StartRevision: 10})
	w.send(progressReq())
	w.none(quiet) // a watcher starts after the store's revision

	w.send(cancelReq(ahead))
	w.next()
	w.create(&pb.WatchCreateRequest{Key: []byte("b")})
	w.send(progressReq())
	resp := w.next()
	if resp.WatchId != -1 || resp.Created || resp.Canceled || len(resp.Events) != 0 || resp.Header.GetRevision() != 2 || resp.Header.GetMemberId() != fakeMemberID {
		t.Fatalf("progress = %v, want watcher -1 at revision 2", resp)
	}
}

// TestWatchProgressDeferred: a progress request that finds a watcher
// catching up is answered once it has caught up, after its events.
func TestWatchProgressDeferred(t *testing.T) {
	f, conn := newWatchFake(t, Config{})
	for i := range 3000 {
		f.put(fmt.Sprintf("k%04d", i), "v")
	}
	w := openWatch(t, conn)
	id := w.create(&pb.WatchCreateRequest{Key: []byte("k"), RangeEnd: []byte("l"), StartRevision: 1})
	w.send(progressReq())
	events := 0
	for {
		resp := w.next()
		if resp.WatchId == -1 {
			if events != 3000 || resp.Header.Revision != 3001 {
				t.Fatalf("progress at revision %d after %d events, want 3001 after 3000", resp.Header.Revision, events)
			}
			return
		}
		if resp.WatchId != id {
			t.Fatalf("unexpected response %v", resp)
		}
		events += len(resp.Events)
	}
}

func TestWatchProgressNotify(t *testing.T) {
	f, conn := newWatchFake(t, Config{WatchProgressNotifyInterval: time.Millisecond}) // raised to 100ms
	f.put("a", "1")
	w := openWatch(t, conn)
	notified := w.create(&pb.WatchCreateRequest{Key: []byte("a"), ProgressNotify: true})
	w.create(&pb.WatchCreateRequest{Key: []byte("b")})
	w.create(&pb.WatchCreateRequest{Key: []byte("c"), ProgressNotify: true, StartRevision: 100})
	start := time.Now()
	for range 3 {
		resp := w.next()
		if resp.WatchId != notified || len(resp.Events) != 0 || resp.Header.GetRevision() != 2 {
			t.Fatalf("got %v, want progress of watcher %d at revision 2", resp, notified)
		}
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("three notifications within %v, want one per 100ms at most", d)
	}
}

// TestWatchStoreClosed: when the member closes the store's streams (it
// installs a snapshot), the gRPC stream ends with Unavailable.
func TestWatchStoreClosed(t *testing.T) {
	f, conn := newWatchFake(t, Config{})
	w := openWatch(t, conn)
	w.create(&pb.WatchCreateRequest{Key: []byte("a")})
	f.closeStreams()
	err := w.ended()
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("stream ended with %v, want Unavailable", err)
	}
}

// TestWatchClientCloseSend: a client that closes its sending side still
// gets events, as with etcd.
func TestWatchClientCloseSend(t *testing.T) {
	f, conn := newWatchFake(t, Config{})
	w := openWatch(t, conn)
	id := w.create(&pb.WatchCreateRequest{Key: []byte("a")})
	if err := w.stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	f.put("a", "1")
	w.wantEvents(id, 2, "PUT a=1@2")
}

func TestWatchFragment(t *testing.T) {
	f, conn := newWatchFake(t, Config{MaxRequestBytes: 1}) // fragments of about 512 KiB
	w := openWatch(t, conn)
	frag := w.create(&pb.WatchCreateRequest{Key: []byte("k"), RangeEnd: []byte("l"), Fragment: true})
	whole := w.create(&pb.WatchCreateRequest{Key: []byte("k"), RangeEnd: []byte("l")})
	value := strings.Repeat("v", 100<<10)
	var pairs []string
	for i := range 12 {
		pairs = append(pairs, fmt.Sprintf("k%02d", i), value)
	}
	f.put(pairs...)

	var parts []*pb.WatchResponse
	var wholeResp *pb.WatchResponse
	for wholeResp == nil || len(parts) == 0 || parts[len(parts)-1].Fragment {
		resp := w.next()
		switch resp.WatchId {
		case frag:
			parts = append(parts, resp)
		case whole:
			wholeResp = resp
		}
	}
	if len(wholeResp.Events) != 12 || wholeResp.Fragment {
		t.Fatalf("unfragmented watcher got %d events, fragment=%v; want all 12 in one response", len(wholeResp.Events), wholeResp.Fragment)
	}
	if len(parts) < 3 {
		t.Fatalf("%d fragments, want at least 3 for 1.2 MB in 512 KiB pieces", len(parts))
	}
	var evs []*mvccpb.Event
	for i, p := range parts {
		if p.Header.GetRevision() != 2 || p.Fragment != (i < len(parts)-1) || proto.Size(p) >= 512<<10+1 {
			t.Errorf("fragment %d: revision %d, fragment=%v, size %d", i, p.Header.GetRevision(), p.Fragment, proto.Size(p))
		}
		evs = append(evs, p.Events...)
	}
	if eventsOf(evs) != eventsOf(wholeResp.Events) {
		t.Fatalf("fragments reassemble to %d events, want the 12 of the whole response", len(evs))
	}
}

func TestFragments(t *testing.T) {
	mk := func(sizes ...int) *pb.WatchResponse {
		resp := &pb.WatchResponse{Header: &pb.ResponseHeader{Revision: 9, ClusterId: 1}, WatchId: 3}
		for i, n := range sizes {
			resp.Events = append(resp.Events, &mvccpb.Event{Kv: &mvccpb.KeyValue{Key: []byte{byte('a' + i)}, Value: make([]byte, n), ModRevision: 9}})
		}
		return resp
	}
	tests := []struct {
		name  string
		resp  *pb.WatchResponse
		limit int
		want  []int // events per fragment
	}{
		{name: "small", resp: mk(10, 10, 10), limit: 1000, want: []int{3}},
		{name: "single big event", resp: mk(5000), limit: 1000, want: []int{1}},
		{name: "no events", resp: mk(), limit: 10, want: []int{0}},
		{name: "split", resp: mk(400, 400, 400, 400, 400), limit: 1000, want: []int{2, 2, 1}},
		{name: "big events alone", resp: mk(2000, 10, 2000, 10, 10), limit: 1000, want: []int{1, 1, 1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := fragments(tt.resp, tt.limit)
			var got []int
			var evs []*mvccpb.Event
			for i, p := range parts {
				got = append(got, len(p.Events))
				evs = append(evs, p.Events...)
				if p.Fragment != (i < len(parts)-1) || p.WatchId != 3 || p.Header != tt.resp.Header {
					t.Errorf("fragment %d: %v", i, p)
				}
				if len(p.Events) > 1 && proto.Size(p) >= tt.limit {
					t.Errorf("fragment %d of %d events has %d bytes, limit %d", i, len(p.Events), proto.Size(p), tt.limit)
				}
				if i < len(parts)-1 && len(parts) > 1 {
					// A fragment is as full as the limit allows.
					next := proto.Size(p) + eventWireSize(parts[i+1].Events[0])
					if next < tt.limit {
						t.Errorf("fragment %d could have taken the next event (%d bytes < %d)", i, next, tt.limit)
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("events per fragment %v, want %v", got, tt.want)
			}
			if len(evs) != len(tt.resp.Events) {
				t.Errorf("%d events in fragments, want %d", len(evs), len(tt.resp.Events))
			}
		})
	}
}
