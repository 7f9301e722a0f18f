package etcdserver

import (
	"bytes"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

func TestEncodeCommonRequestEqualsProto(t *testing.T) {
	for name, r := range commonRequests() {
		t.Run(name, func(t *testing.T) {
			got, ok := encodeCommonRequest(r)
			if !ok {
				t.Fatal("not encoded by hand")
			}
			checkEncodedAsProto(t, r, got)
		})
	}
}

// Every field of InternalRaftRequest but the common ones sends the request
// to proto, so a field the hand encoder does not write is never dropped.
func TestEncodeCommonRequestLeavesOtherFieldsToProto(t *testing.T) {
	common := map[protoreflect.Name]bool{"ID": true, "header": true, "put": true, "txn": true, "lease_grant": true, "lease_revoke": true}
	fields := (&pb.InternalRaftRequest{}).ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if common[fd.Name()] {
			continue
		}
		t.Run(string(fd.Name()), func(t *testing.T) {
			r := &pb.InternalRaftRequest{Header: &pb.RequestHeader{ID: 1}}
			m := r.ProtoReflect()
			m.Set(fd, m.NewField(fd)) // an empty message: still encoded by proto
			if data, ok := encodeCommonRequest(r); ok {
				t.Fatalf("encoded by hand as %x", data)
			}
		})
	}
}

func TestEncodeCommonRequestLeavesOthersToProto(t *testing.T) {
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1)
	withUnknown := func(m proto.Message) proto.Message {
		m.ProtoReflect().SetUnknown(unknown)
		return m
	}
	tests := map[string]*pb.InternalRaftRequest{
		"txn compare":    {Txn: &pb.TxnRequest{Compare: []*pb.Compare{{Key: []byte("k")}}}},
		"txn range":      {Txn: &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{}}}}}},
		"empty op":       {Txn: &pb.TxnRequest{Failure: []*pb.RequestOp{{}}}},
		"nil op":         {Txn: &pb.TxnRequest{Success: []*pb.RequestOp{nil}}},
		"unknown":        withUnknown(&pb.InternalRaftRequest{Put: &pb.PutRequest{}}).(*pb.InternalRaftRequest),
		"put unknown":    {Put: withUnknown(&pb.PutRequest{Key: []byte("k")}).(*pb.PutRequest)},
		"header unknown": {Header: withUnknown(&pb.RequestHeader{ID: 1}).(*pb.RequestHeader)},
		"op unknown":     {Txn: &pb.TxnRequest{Success: []*pb.RequestOp{withUnknown(txnPut(&pb.PutRequest{})).(*pb.RequestOp)}}},
		"op put unknown": {Txn: &pb.TxnRequest{Success: []*pb.RequestOp{txnPut(withUnknown(&pb.PutRequest{}).(*pb.PutRequest))}}},
		"grant unknown":  {LeaseGrant: withUnknown(&pb.LeaseGrantRequest{TTL: 1}).(*pb.LeaseGrantRequest)},
	}
	for name, r := range tests {
		t.Run(name, func(t *testing.T) {
			if data, ok := encodeCommonRequest(r); ok {
				t.Fatalf("encoded by hand as %x", data)
			}
			if _, err := marshalRequest(r); err != nil {
				t.Fatalf("proto fallback: %v", err)
			}
		})
	}
}

// Whatever proto decodes from arbitrary bytes and the hand encoder takes,
// it encodes as proto.Marshal does.
func FuzzEncodeCommonRequest(f *testing.F) {
	seedCommonRequests(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &pb.InternalRaftRequest{}
		if proto.Unmarshal(data, r) != nil {
			return
		}
		if got, ok := encodeCommonRequest(r); ok {
			checkEncodedAsProto(t, r, got)
		}
	})
}

func checkEncodedAsProto(t *testing.T, r *pb.InternalRaftRequest, got []byte) {
	t.Helper()
	want, err := proto.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded %x, proto.Marshal %x", got, want)
	}
	if cap(got) != len(got) {
		t.Fatalf("buffer of %d bytes for %d: the size is miscounted", cap(got), len(got))
	}
}
