package v3rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func fakeWithKeys(n, valueSize int) *fakeServer {
	f := newFakeServer()
	for i := range n {
		f.put(fmt.Sprintf("key%05d", i), strings.Repeat("v", valueSize))
	}
	return f
}

func receiveAll(t *testing.T, c *testClients, r *pb.RangeRequest) ([]*pb.RangeResponse, error) {
	t.Helper()
	stream, err := c.kv.RangeStream(context.Background(), r)
	if err != nil {
		return nil, err
	}
	var chunks []*pb.RangeResponse
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return chunks, nil
		}
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, msg.RangeResponse)
	}
}

// checkChunks verifies the shape of a stream: at most rangeStreamMaxKVs
// pairs and about rangeStreamMaxBytes per chunk, metadata only at the end;
// and that the chunks merge into want.
func checkChunks(t *testing.T, chunks []*pb.RangeResponse, want *pb.RangeResponse) {
	t.Helper()
	if len(chunks) == 0 {
		t.Fatal("no chunks")
	}
	merged := &pb.RangeResponse{}
	for i, ch := range chunks {
		if len(ch.Kvs) > rangeStreamMaxKVs {
			t.Fatalf("chunk %d has %d kvs", i, len(ch.Kvs))
		}
		if len(ch.Kvs) > 1 && proto.Size(ch) > rangeStreamMaxBytes+1024 {
			t.Fatalf("chunk %d is %d bytes", i, proto.Size(ch))
		}
		last := i == len(chunks)-1
		if !last && (ch.Header != nil || ch.More || ch.Count != 0) {
			t.Fatalf("chunk %d of %d carries metadata: header=%v more=%v count=%d", i, len(chunks), ch.Header, ch.More, ch.Count)
		}
		if last && ch.Header == nil {
			t.Fatal("last chunk has no header")
		}
		proto.Merge(merged, ch)
	}
	if !proto.Equal(merged, want) {
		t.Fatalf("merged stream differs from Range: %d kvs more=%v count=%d header=%v; want %d kvs more=%v count=%d header=%v",
			len(merged.Kvs), merged.More, merged.Count, merged.Header, len(want.Kvs), want.More, want.Count, want.Header)
	}
}

func TestRangeStreamMatchesRange(t *testing.T) {
	f := fakeWithKeys(2500, 10)
	c := serveFake(t, f, Config{})
	all := []byte("key")
	allEnd := []byte("kez")
	tests := []struct {
		name string
		req  *pb.RangeRequest
	}{
		{"whole range", &pb.RangeRequest{Key: all, RangeEnd: allEnd}},
		{"from key", &pb.RangeRequest{Key: []byte("key01000"), RangeEnd: []byte{0}}},
		{"limit across chunks", &pb.RangeRequest{Key: all, RangeEnd: allEnd, Limit: 1234}},
		{"limit equal to count", &pb.RangeRequest{Key: all, RangeEnd: allEnd, Limit: 2500}},
		{"limit above count", &pb.RangeRequest{Key: all, RangeEnd: allEnd, Limit: 9999}},
		{"limit in first page", &pb.RangeRequest{Key: all, RangeEnd: allEnd, Limit: 3}},
		{"negative limit means none", &pb.RangeRequest{Key: all, RangeEnd: allEnd, Limit: -1}},
		{"keys only", &pb.RangeRequest{Key: all, RangeEnd: allEnd, KeysOnly: true}},
		{"count only", &pb.RangeRequest{Key: all, RangeEnd: allEnd, CountOnly: true}},
		{"count only with limit", &pb.RangeRequest{Key: all, RangeEnd: allEnd, CountOnly: true, Limit: 1}},
		{"single key", &pb.RangeRequest{Key: []byte("key00042")}},
		{"missing key", &pb.RangeRequest{Key: []byte("nope")}},
		{"empty range", &pb.RangeRequest{Key: []byte("a"), RangeEnd: []byte("b")}},
		{"serializable", &pb.RangeRequest{Key: all, RangeEnd: allEnd, Serializable: true}},
		{"ascending by key", &pb.RangeRequest{Key: all, RangeEnd: allEnd, SortOrder: pb.RangeRequest_ASCEND}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := c.kv.Range(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			chunks, err := receiveAll(t, c, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			checkChunks(t, chunks, want)
		})
	}
}

// TestRangeStreamPinsRevision checks the page requests: the first as the
// client sent it, the others serializable at the first one's revision, each
// starting right after the last key sent.
func TestRangeStreamPinsRevision(t *testing.T) {
	f := fakeWithKeys(2500, 10)
	c := serveFake(t, f, Config{})
	req := &pb.RangeRequest{Key: []byte("key"), RangeEnd: []byte("kez")}
	chunks, err := receiveAll(t, c, req)
	if err != nil {
		t.Fatal(err)
	}
	pages := f.rangeLog()
	if len(pages) < 3 {
		t.Fatalf("only %d pages for 2500 keys", len(pages))
	}
	if pages[0].Serializable || pages[0].Revision != 0 || !bytes.Equal(pages[0].Key, req.Key) {
		t.Fatalf("first page %v", pages[0])
	}
	rev := chunks[len(chunks)-1].Header.Revision
	var lastKey []byte
	sent := 0
	for i, p := range pages {
		if p.Limit <= 0 || p.Limit > rangeStreamMaxKVs {
			t.Fatalf("page %d limit %d", i, p.Limit)
		}
		if i > 0 {
			if !p.Serializable || p.Revision != rev {
				t.Fatalf("page %d: serializable=%v revision=%d, want true and %d", i, p.Serializable, p.Revision, rev)
			}
			if !bytes.Equal(p.Key, append(append([]byte(nil), lastKey...), 0)) {
				t.Fatalf("page %d starts at %q after %q", i, p.Key, lastKey)
			}
		}
		sent += int(p.Limit)
		lastKey = []byte(fmt.Sprintf("key%05d", min(sent, 2500)-1))
	}
}

func TestRangeStreamRequestedRevision(t *testing.T) {
	f := fakeWithKeys(1500, 10)
	c := serveFake(t, f, Config{})
	if _, err := receiveAll(t, c, &pb.RangeRequest{Key: []byte("key"), RangeEnd: []byte("kez"), Revision: 5}); err != nil {
		t.Fatal(err)
	}
	for i, p := range f.rangeLog() {
		if p.Revision != 5 {
			t.Fatalf("page %d read at %d, want 5", i, p.Revision)
		}
	}
}

// TestRangeStreamLargeValues checks byte-bounded chunks: 10 KiB values give
// chunks of about 1 MiB, each below the limit.
func TestRangeStreamLargeValues(t *testing.T) {
	f := fakeWithKeys(400, 10*1024)
	c := serveFake(t, f, Config{})
	req := &pb.RangeRequest{Key: []byte("key"), RangeEnd: []byte("kez")}
	want, err := c.kv.Range(context.Background(), req, grpcMaxRecv())
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := receiveAll(t, c, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 4 {
		t.Fatalf("%d chunks for 4 MiB", len(chunks))
	}
	checkChunks(t, chunks, want)
}

// TestRangeStreamHugeValue: a pair above the chunk size goes alone.
func TestRangeStreamHugeValue(t *testing.T) {
	f := fakeWithKeys(3, rangeStreamMaxBytes+10)
	c := serveFake(t, f, Config{})
	req := &pb.RangeRequest{Key: []byte("key"), RangeEnd: []byte("kez")}
	stream, err := c.kv.RangeStream(context.Background(), req, grpcMaxRecv())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.RangeResponse.Kvs) != 1 {
			t.Fatalf("chunk with %d huge kvs", len(msg.RangeResponse.Kvs))
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d chunks", n)
	}
}

func TestRangeStreamRejects(t *testing.T) {
	f := fakeWithKeys(10, 1)
	c := serveFake(t, f, Config{})
	key, end := []byte("key"), []byte("kez")
	const sortMsg = "RangeStream does not support custom sort orders"
	const filterMsg = "RangeStream does not support revision filters"
	tests := []struct {
		name     string
		req      *pb.RangeRequest
		wantCode codes.Code
		wantMsg  string
	}{
		{"empty key", &pb.RangeRequest{}, codes.InvalidArgument, "etcdserver: key is not provided"},
		{"invalid sort order", &pb.RangeRequest{Key: key, SortOrder: 7}, codes.InvalidArgument, "etcdserver: invalid sort option"},
		{"invalid sort target", &pb.RangeRequest{Key: key, SortTarget: 7}, codes.InvalidArgument, "etcdserver: invalid sort option"},
		{"descend", &pb.RangeRequest{Key: key, RangeEnd: end, SortOrder: pb.RangeRequest_DESCEND}, codes.Unimplemented, sortMsg},
		{"ascend by value", &pb.RangeRequest{Key: key, RangeEnd: end, SortOrder: pb.RangeRequest_ASCEND, SortTarget: pb.RangeRequest_VALUE}, codes.Unimplemented, sortMsg},
		{"min mod revision", &pb.RangeRequest{Key: key, RangeEnd: end, MinModRevision: 1}, codes.Unimplemented, filterMsg},
		{"max mod revision", &pb.RangeRequest{Key: key, RangeEnd: end, MaxModRevision: 1}, codes.Unimplemented, filterMsg},
		{"min create revision", &pb.RangeRequest{Key: key, RangeEnd: end, MinCreateRevision: 1}, codes.Unimplemented, filterMsg},
		{"max create revision", &pb.RangeRequest{Key: key, RangeEnd: end, MaxCreateRevision: 1}, codes.Unimplemented, filterMsg},
		{"sort checked before filters", &pb.RangeRequest{Key: key, RangeEnd: end, SortOrder: pb.RangeRequest_DESCEND, MinModRevision: 1}, codes.Unimplemented, sortMsg},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.callCount()
			chunks, err := receiveAll(t, c, tt.req)
			if status.Code(err) != tt.wantCode || status.Convert(err).Message() != tt.wantMsg {
				t.Fatalf("got %v, want %v %q", err, tt.wantCode, tt.wantMsg)
			}
			if len(chunks) != 0 || f.callCount() != before {
				t.Fatal("a rejected request reached the member or sent chunks")
			}
		})
	}
}

// TestRangeStreamFailsMidway: a page that fails ends the stream with the
// mapped error, and no chunk sent before looks like a complete result.
func TestRangeStreamFailsMidway(t *testing.T) {
	f := fakeWithKeys(2500, 10)
	f.rangeFailAt = 3
	c := serveFake(t, f, Config{})
	chunks, err := receiveAll(t, c, &pb.RangeRequest{Key: []byte("key"), RangeEnd: []byte("kez")})
	if status.Code(err) != codes.Unavailable || status.Convert(err).Message() != "etcdserver: request timed out" {
		t.Fatalf("got %v", err)
	}
	if len(chunks) == 0 {
		t.Fatal("expected the chunks of the pages read before the failure")
	}
	for i, ch := range chunks {
		if ch.Header != nil || ch.More || ch.Count != 0 {
			t.Fatalf("chunk %d carries metadata", i)
		}
	}
}
