package httpapi

import (
	"bytes"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestCompactJSON: whatever spacing protojson chooses (multi-line here, a
// space after some commas in some builds), the gateway writes compact
// JSON, as etcd's does, through Marshal and through stream encoders.
func TestCompactJSON(t *testing.T) {
	m := &compactJSONPb{runtime.JSONPb{MarshalOptions: protojson.MarshalOptions{UseProtoNames: true, Multiline: true, Indent: "  "}}}
	msg := &pb.RangeResponse{Header: &pb.ResponseHeader{ClusterId: 1, MemberId: 2, Revision: 3}, Count: 1}
	const want = `{"header":{"cluster_id":"1","member_id":"2","revision":"3"},"count":"1"}`
	b, err := m.Marshal(msg)
	if err != nil || string(b) != want {
		t.Fatalf("Marshal = %s, %v; want %s", b, err, want)
	}
	var out bytes.Buffer
	if err := m.NewEncoder(&out).Encode(msg); err != nil || out.String() != want+"\n" {
		t.Fatalf("Encode wrote %q, %v; want %q", out.String(), err, want+"\n")
	}
}
