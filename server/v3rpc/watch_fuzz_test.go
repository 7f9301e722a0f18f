package v3rpc

import (
	"bytes"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/pkg/fuzztest"
)

// FuzzWatchCreate sends a watch create request with arbitrary fields to the
// Watch service over a store with history (optionally compacted). The
// answer must be etcd's: "created", either refused (watch ID -1 and a
// reason) or accepted (the asked ID when one was given, even a negative
// one, as etcd); the watcher then
// delivers only events in its range, from its start revision, without the
// filtered types, and its cancel ends it. Nothing may panic or hang.
func FuzzWatchCreate(f *testing.F) {
	f.Fuzz(func(t *testing.T, key, rangeEnd []byte, startRev, watchID int64, prevKV, progressNotify, fragment, compacted bool, filters []byte) {
		if len(filters) > 4 {
			filters = filters[:4]
		}
		fk, conn := newWatchFake(t, Config{})
		for _, kv := range [][2]string{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"a", "4"}} {
			fk.put(kv[0], kv[1]) // revisions 2..5
		}
		if compacted {
			done, err := fk.kv.Compact(4)
			if err != nil {
				t.Fatal(err)
			}
			<-done
		}
		cr := &pb.WatchCreateRequest{Key: key, RangeEnd: rangeEnd, StartRevision: startRev, WatchId: watchID,
			PrevKv: prevKV, ProgressNotify: progressNotify, Fragment: fragment}
		for _, b := range filters {
			cr.Filters = append(cr.Filters, pb.WatchCreateRequest_FilterType(b%3))
		}
		w := openWatch(t, conn)
		w.send(createReq(cr))
		resp := w.next()
		if !resp.Created {
			t.Fatalf("create %v: first answer %v is not created", cr, resp)
		}
		if resp.Canceled {
			if resp.WatchId != -1 || !(strings.HasPrefix(resp.CancelReason, "mvcc: ") || strings.HasPrefix(resp.CancelReason, "etcdserver: ")) {
				t.Fatalf("create %v refused as %v", cr, resp)
			}
			return
		}
		// As etcd, any ID the client asks for is taken, negative ones too;
		// 0 asks for the next free one.
		if (watchID != 0 && resp.WatchId != watchID) || (watchID == 0 && resp.WatchId < 0) {
			t.Fatalf("create %v accepted with watch ID %d", cr, resp.WatchId)
		}
		id := resp.WatchId
		fk.put("a", "5") // revision 6
		fk.del("b")      // revision 7
		w.send(cancelReq(id))
		for {
			r := w.next()
			if r.WatchId != id {
				t.Fatalf("create %v: answer %v for another watcher", cr, r)
			}
			if r.Canceled {
				return
			}
			for _, ev := range r.Events {
				checkWatchEvent(t, cr, ev)
			}
		}
	})
}

// checkWatchEvent checks one delivered event against the create request.
func checkWatchEvent(t *testing.T, cr *pb.WatchCreateRequest, ev *mvccpb.Event) {
	t.Helper()
	k := ev.Kv.Key
	var in bool
	switch {
	case len(cr.RangeEnd) == 0:
		in = bytes.Equal(k, cr.Key)
	case bytes.Equal(cr.RangeEnd, []byte{0}):
		in = bytes.Compare(k, cr.Key) >= 0
	default:
		in = bytes.Compare(k, cr.Key) >= 0 && bytes.Compare(k, cr.RangeEnd) < 0
	}
	if !in {
		t.Fatalf("watcher %v got event of key %q outside its range", cr, k)
	}
	if cr.StartRevision > 0 && ev.Kv.ModRevision < cr.StartRevision {
		t.Fatalf("watcher %v got event at revision %d before its start", cr, ev.Kv.ModRevision)
	}
	for _, ft := range cr.Filters {
		if (ft == pb.WatchCreateRequest_NOPUT && ev.Type == mvccpb.Event_PUT) || (ft == pb.WatchCreateRequest_NODELETE && ev.Type == mvccpb.Event_DELETE) {
			t.Fatalf("watcher %v got a filtered %v event", cr, ev.Type)
		}
	}
	if !cr.PrevKv && ev.PrevKv != nil {
		t.Fatalf("watcher %v got a previous key-value it did not ask for", cr)
	}
}

// TestWatchFuzzSeeds keeps FuzzWatchCreate's committed corpus in step:
// every kind of answer (accepted, refused for each reason, compacted)
// is among the seeds.
func TestWatchFuzzSeeds(t *testing.T) {
	type args = []any
	seed := func(key, end string, rev, id int64, prev, progress, frag, compacted bool, filters ...byte) args {
		return args{[]byte(key), []byte(end), rev, id, prev, progress, frag, compacted, filters}
	}
	fuzztest.Check(t, "FuzzWatchCreate", []fuzztest.Seed{
		{Name: "key", Args: seed("a", "", 0, 0, false, false, false, false)},
		{Name: "prefix-from-history-prev-kv", Args: seed("a", "b", 2, 0, true, false, false, false)},
		{Name: "all-keys-no-put", Args: seed("\x00", "\x00", 0, 5, false, true, false, false, 0)},
		{Name: "no-delete-fragment", Args: seed("a", "z", 3, 0, false, false, true, false, 1)},
		{Name: "compacted-start", Args: seed("a", "", 2, 0, false, false, false, true)},
		{Name: "negative-start", Args: seed("a", "", -1, 0, false, false, false, false)},
		{Name: "empty-range", Args: seed("b", "a", 0, 0, false, false, false, false)},
		{Name: "future-start", Args: seed("a", "", 100, 7, false, false, false, false, 2)},
		{Name: "negative-watch-id", Args: seed("0", "", 2, -84, false, false, false, true)},
	})
}
