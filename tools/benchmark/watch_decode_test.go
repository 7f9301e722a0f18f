package main

import (
	"encoding/binary"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// decodedEvent is ev as the receivers see it: encoded in a WatchResponse
// and decoded by watchCodec.
func decodedEvent(t *testing.T, ev *mvccpb.Event) watchEvent {
	t.Helper()
	r := decodeWith(t, &pb.WatchResponse{Events: []*mvccpb.Event{ev}}, nil)
	if len(r.events) != 1 {
		t.Fatalf("decoded %d events, want 1", len(r.events))
	}
	return r.events[0]
}

// decodeWith encodes resp, appends extra (raw fields), splits the bytes in
// two buffers as gRPC may hand them over, and decodes them with watchCodec.
func decodeWith(t *testing.T, resp *pb.WatchResponse, extra []byte) watchEventsResponse {
	t.Helper()
	b, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, extra...)
	half := len(b) / 2
	var r watchEventsResponse
	if err := newWatchCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(b[:half]), mem.SliceBuffer(b[half:])}, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestWatchCodecDecodesWhatTheReceiversUse(t *testing.T) {
	value := make([]byte, 16)
	binary.BigEndian.PutUint64(value, 42)
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7)
	unknown = protowire.AppendFixed32(protowire.AppendTag(unknown, 98, protowire.Fixed32Type), 1)
	for _, tc := range []struct {
		name  string
		resp  *pb.WatchResponse
		extra []byte
		want  watchEventsResponse
	}{
		{"events with header and prev_kv", &pb.WatchResponse{
			Header: &pb.ResponseHeader{Revision: 9, RaftTerm: 2}, WatchId: 3,
			Events: []*mvccpb.Event{
				{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte("k"), ModRevision: 8, Value: value}, PrevKv: &mvccpb.KeyValue{ModRevision: 5, Value: []byte("old")}},
				{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte("k"), ModRevision: 9}},
			}}, nil,
			watchEventsResponse{watchID: 3, events: []watchEvent{{typ: mvccpb.PUT, modRevision: 8, seq: 42, hasSeq: true}, {typ: mvccpb.DELETE, modRevision: 9}}}},
		{"compaction cancel, negative ID", &pb.WatchResponse{WatchId: -1, Canceled: true, CompactRevision: 4, CancelReason: "compacted"}, nil,
			watchEventsResponse{watchID: -1, canceled: true, compactRevision: 4, cancelReason: "compacted"}},
		{"unknown fields are skipped", &pb.WatchResponse{WatchId: 1}, unknown, watchEventsResponse{watchID: 1}},
		{"short value has no sequence number", &pb.WatchResponse{Events: []*mvccpb.Event{{Kv: &mvccpb.KeyValue{ModRevision: 2, Value: []byte("abc")}}}}, nil,
			watchEventsResponse{events: []watchEvent{{typ: mvccpb.PUT, modRevision: 2}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeWith(t, tc.resp, tc.extra)
			if got.watchID != tc.want.watchID || got.canceled != tc.want.canceled || got.compactRevision != tc.want.compactRevision ||
				got.cancelReason != tc.want.cancelReason || len(got.events) != len(tc.want.events) {
				t.Fatalf("decoded %+v, want %+v", got, tc.want)
			}
			for i := range got.events {
				if got.events[i] != tc.want.events[i] {
					t.Errorf("event %d = %+v, want %+v", i, got.events[i], tc.want.events[i])
				}
			}
		})
	}
	var r watchEventsResponse
	if err := newWatchCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0x5a, 0xff})}, &r); err == nil {
		t.Error("a truncated message decoded")
	}
}
