package etcdserver

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func TestRequestIDOf(t *testing.T) {
	encode := func(r *pb.InternalRaftRequest) []byte {
		data, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	put := &pb.PutRequest{Key: []byte("k"), Value: make([]byte, 300)}
	tests := []struct {
		name   string
		data   []byte
		wantID uint64
		wantOK bool
	}{
		{"header ID", encode(&pb.InternalRaftRequest{Header: &pb.RequestHeader{ID: 1<<63 + 5, Username: "u", AuthRevision: 3}, Put: put}), 1<<63 + 5, true},
		{"top-level ID", encode(&pb.InternalRaftRequest{ID: 42, Put: put}), 42, true},
		{"header ID wins", encode(&pb.InternalRaftRequest{ID: 42, Header: &pb.RequestHeader{ID: 7}}), 7, true},
		{"header without ID", encode(&pb.InternalRaftRequest{ID: 42, Header: &pb.RequestHeader{Username: "u"}}), 42, true},
		{"no ID", encode(&pb.InternalRaftRequest{Put: put}), 0, true},
		{"empty", nil, 0, true},
		{"truncated", encode(&pb.InternalRaftRequest{Header: &pb.RequestHeader{ID: 9}, Put: put})[:10], 0, false},
		{"bad header", protowire.AppendBytes(protowire.AppendTag(nil, internalRequestHeaderField, protowire.BytesType), []byte{0x08}), 0, false},
	}
	for _, tt := range tests {
		id, ok := requestIDOf(tt.data)
		if id != tt.wantID || ok != tt.wantOK {
			t.Errorf("%s: requestIDOf = %d, %v; want %d, %v", tt.name, id, ok, tt.wantID, tt.wantOK)
		}
	}
}

// TestRequestIDOfMatchesDecoding: the ID read from the encoding is the one
// the decoded request carries, for each kind of request the member proposes.
func TestRequestIDOfMatchesDecoding(t *testing.T) {
	reqs := []*pb.InternalRaftRequest{
		{Header: &pb.RequestHeader{ID: 11}, Put: &pb.PutRequest{Key: []byte("a"), Value: []byte("b"), Lease: 5}},
		{Header: &pb.RequestHeader{ID: 12}, DeleteRange: &pb.DeleteRangeRequest{Key: []byte("a"), RangeEnd: []byte("z")}},
		{Header: &pb.RequestHeader{ID: 13}, Txn: &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("x")}}}}}},
		{Header: &pb.RequestHeader{ID: 14}, LeaseGrant: &pb.LeaseGrantRequest{TTL: 10, ID: 99}},
		{Header: &pb.RequestHeader{ID: 15}, Compaction: &pb.CompactionRequest{Revision: 3}},
	}
	for _, r := range reqs {
		data, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		decoded := &pb.InternalRaftRequest{}
		if err := proto.Unmarshal(data, decoded); err != nil {
			t.Fatal(err)
		}
		if id, ok := requestIDOf(data); !ok || id != decoded.GetHeader().GetID() {
			t.Errorf("requestIDOf(%v) = %d, %v; want %d", r, id, ok, decoded.GetHeader().GetID())
		}
	}
}

func TestLocalRequestsTakeOnce(t *testing.T) {
	l := newLocalRequests()
	r := &pb.InternalRaftRequest{Header: &pb.RequestHeader{ID: 3}}
	l.add(3, r)
	if got := l.take(4); got != nil {
		t.Fatalf("take(4) = %v, want nil", got)
	}
	if got := l.take(3); got != r {
		t.Fatalf("take(3) = %v, want the added request", got)
	}
	if got := l.take(3); got != nil {
		t.Fatalf("second take(3) = %v, want nil", got)
	}
}
