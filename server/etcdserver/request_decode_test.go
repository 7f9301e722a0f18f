package etcdserver

import (
	"bytes"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func txnPut(p *pb.PutRequest) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: p}}
}

// commonRequests are requests decodeCommonRequest must decode itself.
func commonRequests() map[string]*pb.InternalRaftRequest {
	hdr := &pb.RequestHeader{ID: 0x1234567890abcdef, Username: "röot", AuthRevision: 7}
	return map[string]*pb.InternalRaftRequest{
		"empty":          {},
		"old ID only":    {ID: 99},
		"put":            {Header: &pb.RequestHeader{ID: 1}, Put: &pb.PutRequest{Key: []byte("foo"), Value: []byte("bar")}},
		"put all fields": {Header: hdr, Put: &pb.PutRequest{Key: []byte("k"), Value: bytes.Repeat([]byte{0}, 300), Lease: -5, PrevKv: true, IgnoreValue: true, IgnoreLease: true}},
		"empty put":      {Header: &pb.RequestHeader{}, Put: &pb.PutRequest{}},
		"txn of puts": {Header: hdr, Txn: &pb.TxnRequest{
			Success: []*pb.RequestOp{txnPut(&pb.PutRequest{Key: []byte("a"), Value: []byte("1")}), txnPut(&pb.PutRequest{Key: []byte("b"), Lease: 3})},
			Failure: []*pb.RequestOp{txnPut(&pb.PutRequest{Key: []byte("c")})},
		}},
		"empty txn":    {Header: hdr, Txn: &pb.TxnRequest{}},
		"lease grant":  {Header: hdr, LeaseGrant: &pb.LeaseGrantRequest{TTL: 60, ID: 0x7fffffffffffffff}},
		"lease revoke": {Header: hdr, LeaseRevoke: &pb.LeaseRevokeRequest{ID: 42}},
	}
}

func TestDecodeCommonRequestEqualsProto(t *testing.T) {
	for name, r := range commonRequests() {
		t.Run(name, func(t *testing.T) {
			data, err := proto.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := decodeCommonRequest(data)
			if !ok {
				t.Fatalf("not decoded by hand")
			}
			checkSameAsProto(t, data, got)
		})
	}
}

// Requests proto would decode differently (merged or unknown fields) or
// that are not common go to proto.
func TestDecodeCommonRequestLeavesOthersToProto(t *testing.T) {
	marshal := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	put := marshal(&pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k")}})
	field := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	tests := map[string][]byte{
		"range":          marshal(&pb.InternalRaftRequest{Range: &pb.RangeRequest{Key: []byte("k")}}),
		"delete":         marshal(&pb.InternalRaftRequest{DeleteRange: &pb.DeleteRangeRequest{Key: []byte("k")}}),
		"txn compare":    marshal(&pb.InternalRaftRequest{Txn: &pb.TxnRequest{Compare: []*pb.Compare{{Key: []byte("k")}}}}),
		"txn range":      marshal(&pb.InternalRaftRequest{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{}}}}}}),
		"empty op":       marshal(&pb.InternalRaftRequest{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{{}}}}),
		"auth":           marshal(&pb.InternalRaftRequest{AuthEnable: &pb.AuthEnableRequest{}}),
		"put twice":      append(append([]byte{}, put...), put...),
		"unknown field":  append(append([]byte{}, put...), protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 1)...),
		"put unknown":    field(internalPutField, protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 1)),
		"op put twice":   field(internalTxnField, field(txnSuccessField, append(field(requestOpPutField, nil), field(requestOpPutField, nil)...))),
		"bad username":   field(internalRequestHeaderField, field(headerUsernameField, []byte{0xff})),
		"fixed64 field":  protowire.AppendFixed64(protowire.AppendTag(nil, 1, protowire.Fixed64Type), 1),
		"truncated":      put[:len(put)-1],
		"field number 0": {0x00, 0x01},
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			if r, ok := decodeCommonRequest(data); ok {
				t.Fatalf("decoded by hand: %v", r)
			}
		})
	}
}

// The decoded request does not share the caller's buffer, and a byte field
// cannot be grown into the next one.
func TestDecodeCommonRequestCopies(t *testing.T) {
	data, err := proto.Marshal(&pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("key"), Value: []byte("value")}})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := decodeCommonRequest(data)
	if !ok {
		t.Fatal("not decoded by hand")
	}
	clear(data)
	if string(r.Put.Key) != "key" || string(r.Put.Value) != "value" {
		t.Fatalf("request changed with the caller's buffer: %q %q", r.Put.Key, r.Put.Value)
	}
	if cap(r.Put.Key) != len(r.Put.Key) {
		t.Fatalf("key capacity %d beyond its length %d", cap(r.Put.Key), len(r.Put.Key))
	}
}

// seedCommonRequests seeds f with the proto encoding of every
// commonRequests case.
func seedCommonRequests(f *testing.F) {
	for _, r := range commonRequests() {
		data, err := proto.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

func FuzzDecodeCommonRequest(f *testing.F) {
	seedCommonRequests(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, ok := decodeCommonRequest(data); ok {
			checkSameAsProto(t, data, r)
		}
	})
}

// checkSameAsProto fails unless proto.Unmarshal decodes data into a request
// equal to got, which also marshals to the same bytes.
func checkSameAsProto(t *testing.T, data []byte, got *pb.InternalRaftRequest) {
	t.Helper()
	want := &pb.InternalRaftRequest{}
	if err := proto.Unmarshal(data, want); err != nil {
		t.Fatalf("hand decoder accepted what proto rejects: %v", err)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("decoded %v, proto %v", got, want)
	}
	opts := proto.MarshalOptions{Deterministic: true}
	gotBytes, err1 := opts.Marshal(got)
	wantBytes, err2 := opts.Marshal(want)
	if err1 != nil || err2 != nil || !bytes.Equal(gotBytes, wantBytes) {
		t.Fatalf("re-encoded %x (%v), proto's %x (%v)", gotBytes, err1, wantBytes, err2)
	}
}

func BenchmarkDecodeRequest(b *testing.B) {
	value := bytes.Repeat([]byte("v"), 256)
	put := func(k string) *pb.PutRequest { return &pb.PutRequest{Key: []byte(k), Value: value} }
	requests := map[string]*pb.InternalRaftRequest{
		"put": {Header: &pb.RequestHeader{ID: 1 << 50}, Put: put("key-000001")},
		"txn4": {Header: &pb.RequestHeader{ID: 1 << 50}, Txn: &pb.TxnRequest{Success: []*pb.RequestOp{
			txnPut(put("key-000001")), txnPut(put("key-000002")), txnPut(put("key-000003")), txnPut(put("key-000004"))}}},
	}
	for name, r := range requests {
		data, err := proto.Marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/hand", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := decodeCommonRequest(data); !ok {
					b.Fatal("not decoded")
				}
			}
		})
		b.Run(name+"/proto", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := proto.Unmarshal(data, &pb.InternalRaftRequest{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
