package v3rpc

import (
	"bytes"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

func testEvent(key string, rev int64, typ mvccpb.Event_EventType) *mvccpb.Event {
	return &mvccpb.Event{Type: typ, Kv: &mvccpb.KeyValue{Key: []byte(key), Value: []byte("v-" + key), ModRevision: rev, CreateRevision: 2, Version: 3}}
}

func testHeader(rev int64) *pb.ResponseHeader {
	return &pb.ResponseHeader{ClusterId: 11, MemberId: 22, RaftTerm: 3, Revision: rev}
}

// TestWatchEncoderMatchesProto: an encoded response is byte for byte what
// proto.Marshal makes of the same WatchResponse, so clients cannot tell.
func TestWatchEncoderMatchesProto(t *testing.T) {
	put, del := testEvent("a", 7, mvccpb.PUT), testEvent("b", 7, mvccpb.DELETE)
	for _, tc := range []struct {
		name string
		id   int64
		evs  []*mvccpb.Event
	}{
		{"first watcher, one event", 0, []*mvccpb.Event{put}},
		{"later watcher, two events", 300, []*mvccpb.Event{put, del}},
		{"client-chosen negative ID", -5, []*mvccpb.Event{del}},
		{"progress: no events", 9, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var enc watchEncoder
			got, err := enc.encode(tc.id, 7, tc.evs, testHeader)
			if err != nil {
				t.Fatal(err)
			}
			want, err := proto.Marshal(&pb.WatchResponse{Header: testHeader(7), WatchId: tc.id, Events: tc.evs})
			if err != nil {
				t.Fatal(err)
			}
			if b := got.buffers().Materialize(); !bytes.Equal(b, want) {
				t.Fatalf("encoded %x, proto %x", b, want)
			}
			if got.size != len(want) {
				t.Fatalf("size %d, want %d", got.size, len(want))
			}
		})
	}
}

// TestWatchEncoderSharesAndRenews: responses with the same revision and
// events share their encoding; a change encodes anew without touching the
// bytes earlier responses (maybe still queued in gRPC) point to.
func TestWatchEncoderSharesAndRenews(t *testing.T) {
	e1, e2 := testEvent("a", 7, mvccpb.PUT), testEvent("a", 8, mvccpb.PUT)
	headers := 0
	header := func(rev int64) *pb.ResponseHeader { headers++; return testHeader(rev) }
	var enc watchEncoder
	first, _ := enc.encode(1, 7, []*mvccpb.Event{e1}, header)
	before := first.buffers().Materialize()
	second, _ := enc.encode(2, 7, []*mvccpb.Event{e1}, header) // another slice, same events
	if headers != 1 || &first.parts[2].ReadOnlyData()[0] != &second.parts[2].ReadOnlyData()[0] {
		t.Fatalf("same revision and events: %d headers built, events shared: %v", headers,
			&first.parts[2].ReadOnlyData()[0] == &second.parts[2].ReadOnlyData()[0])
	}
	third, _ := enc.encode(1, 8, []*mvccpb.Event{e2}, header)
	enc.forgetHeader()
	fourth, _ := enc.encode(1, 8, []*mvccpb.Event{e2}, header)
	if headers != 3 {
		t.Fatalf("%d headers built, want 3 (new revision, then forgotten)", headers)
	}
	if !bytes.Equal(first.buffers().Materialize(), before) {
		t.Fatal("a later encoding changed an earlier response's bytes")
	}
	var got pb.WatchResponse
	if err := proto.Unmarshal(fourth.buffers().Materialize(), &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(third.buffers().Materialize(), fourth.buffers().Materialize()) || got.Header.Revision != 8 || got.Events[0].Kv.ModRevision != 8 {
		t.Fatalf("response at revision 8: %v", &got)
	}
}
