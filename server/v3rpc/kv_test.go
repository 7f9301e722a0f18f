package v3rpc

import (
	"context"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func putOp(key string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key)}}}
}

func delOp(key, end string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte(key), RangeEnd: []byte(end)}}}
}

func rangeOp(key string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte(key)}}}
}

func txnOp(success, failure []*pb.RequestOp) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Success: success, Failure: failure}}}
}

func compares(n int) []*pb.Compare {
	cs := make([]*pb.Compare, n)
	for i := range cs {
		cs[i] = &pb.Compare{Key: []byte("c")}
	}
	return cs
}

func ops(n int, op func(i int) *pb.RequestOp) []*pb.RequestOp {
	out := make([]*pb.RequestOp, n)
	for i := range out {
		out[i] = op(i)
	}
	return out
}

func distinctPuts(n int) []*pb.RequestOp {
	return ops(n, func(i int) *pb.RequestOp { return putOp(string(rune('a'+i%26)) + string(rune('a'+i/26))) })
}

// TestKVValidation sends each malformed request over gRPC and expects
// etcd's error, with the member never called.
func TestKVValidation(t *testing.T) {
	const maxOps = 4
	f := newFakeServer()
	c := serveFake(t, f, Config{MaxTxnOps: maxOps})
	ctx := context.Background()

	rangeCall := func(r *pb.RangeRequest) func() error {
		return func() error { _, err := c.kv.Range(ctx, r); return err }
	}
	putCall := func(r *pb.PutRequest) func() error {
		return func() error { _, err := c.kv.Put(ctx, r); return err }
	}
	txnCall := func(r *pb.TxnRequest) func() error {
		return func() error { _, err := c.kv.Txn(ctx, r); return err }
	}
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"range empty key", rangeCall(&pb.RangeRequest{}), rpctypes.ErrGRPCEmptyKey},
		{"range bad sort order", rangeCall(&pb.RangeRequest{Key: []byte("k"), SortOrder: 9}), rpctypes.ErrGRPCInvalidSortOption},
		{"range bad sort target", rangeCall(&pb.RangeRequest{Key: []byte("k"), SortTarget: 9}), rpctypes.ErrGRPCInvalidSortOption},
		{"range empty key before sort", rangeCall(&pb.RangeRequest{SortOrder: 9}), rpctypes.ErrGRPCEmptyKey},
		{"put empty key", putCall(&pb.PutRequest{}), rpctypes.ErrGRPCEmptyKey},
		{"put ignore value with value", putCall(&pb.PutRequest{Key: []byte("k"), Value: []byte("v"), IgnoreValue: true}), rpctypes.ErrGRPCValueProvided},
		{"put ignore lease with lease", putCall(&pb.PutRequest{Key: []byte("k"), Lease: 5, IgnoreLease: true}), rpctypes.ErrGRPCLeaseProvided},
		{"delete empty key", func() error { _, err := c.kv.DeleteRange(ctx, &pb.DeleteRangeRequest{}); return err }, rpctypes.ErrGRPCEmptyKey},
		{"txn too many compares", txnCall(&pb.TxnRequest{Compare: compares(maxOps + 1)}), rpctypes.ErrGRPCTooManyOps},
		{"txn too many success ops", txnCall(&pb.TxnRequest{Success: distinctPuts(maxOps + 1)}), rpctypes.ErrGRPCTooManyOps},
		{"txn too many failure ops", txnCall(&pb.TxnRequest{Failure: distinctPuts(maxOps + 1)}), rpctypes.ErrGRPCTooManyOps},
		{"txn nested over leftover budget", txnCall(&pb.TxnRequest{
			Compare: compares(2), Success: []*pb.RequestOp{txnOp(distinctPuts(3), nil)},
		}), rpctypes.ErrGRPCTooManyOps},
		{"txn compare empty key", txnCall(&pb.TxnRequest{Compare: []*pb.Compare{{}}}), rpctypes.ErrGRPCEmptyKey},
		{"txn compare checked before ops", txnCall(&pb.TxnRequest{Compare: []*pb.Compare{{}}, Success: []*pb.RequestOp{rangeOp("")}}), rpctypes.ErrGRPCEmptyKey},
		{"txn nil op", txnCall(&pb.TxnRequest{Success: []*pb.RequestOp{{}}}), rpctypes.ErrGRPCKeyNotFound},
		{"txn nested empty key", txnCall(&pb.TxnRequest{Failure: []*pb.RequestOp{txnOp(nil, []*pb.RequestOp{delOp("", "")})}}), rpctypes.ErrGRPCEmptyKey},
		{"txn nested put value provided", txnCall(&pb.TxnRequest{Success: []*pb.RequestOp{txnOp([]*pb.RequestOp{{
			Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("k"), Value: []byte("v"), IgnoreValue: true}},
		}}, nil)}}), rpctypes.ErrGRPCValueProvided},
		{"txn duplicate put", txnCall(&pb.TxnRequest{Success: []*pb.RequestOp{putOp("a"), putOp("a")}}), rpctypes.ErrGRPCDuplicateKey},
		{"txn put in deleted range", txnCall(&pb.TxnRequest{Failure: []*pb.RequestOp{putOp("b"), delOp("a", "c")}}), rpctypes.ErrGRPCDuplicateKey},
		{"txn put and delete of key", txnCall(&pb.TxnRequest{Success: []*pb.RequestOp{delOp("a", ""), putOp("a")}}), rpctypes.ErrGRPCDuplicateKey},
		{"txn nested put vs outer put", txnCall(&pb.TxnRequest{Success: []*pb.RequestOp{putOp("a"), txnOp([]*pb.RequestOp{putOp("a")}, nil)}}), rpctypes.ErrGRPCDuplicateKey},
		{"txn nested put vs outer delete", txnCall(&pb.TxnRequest{Success: []*pb.RequestOp{delOp("a", "z"), txnOp(nil, []*pb.RequestOp{putOp("m")})}}), rpctypes.ErrGRPCDuplicateKey},
		{"txn two nested txns put same key", txnCall(&pb.TxnRequest{Success: []*pb.RequestOp{
			txnOp([]*pb.RequestOp{putOp("a")}, nil), txnOp([]*pb.RequestOp{putOp("a")}, nil),
		}}), rpctypes.ErrGRPCDuplicateKey},
		{"txn nested delete then later nested put", txnCall(&pb.TxnRequest{Success: []*pb.RequestOp{
			txnOp([]*pb.RequestOp{delOp("a", "c")}, nil), txnOp(nil, []*pb.RequestOp{putOp("b")}),
		}}), rpctypes.ErrGRPCDuplicateKey},
		{"txn duplicate inside nested branch", txnCall(&pb.TxnRequest{Success: []*pb.RequestOp{
			txnOp([]*pb.RequestOp{putOp("x"), putOp("x")}, nil),
		}}), rpctypes.ErrGRPCDuplicateKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.callCount()
			err := tt.call()
			want := status.Convert(tt.want)
			got := status.Convert(err)
			if got.Code() != want.Code() || got.Message() != want.Message() {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if f.callCount() != before {
				t.Fatal("the member was called for an invalid request")
			}
		})
	}
}

// TestTxnAccepted lists txns etcd lets through although they look close to
// the rejected ones.
func TestTxnAccepted(t *testing.T) {
	const maxOps = 4
	f := newFakeServer()
	c := serveFake(t, f, Config{MaxTxnOps: maxOps})
	tests := []struct {
		name string
		req  *pb.TxnRequest
	}{
		{"budget exactly used", &pb.TxnRequest{Compare: compares(maxOps), Success: distinctPuts(maxOps), Failure: distinctPuts(maxOps)}},
		{"nested within leftover budget", &pb.TxnRequest{Compare: compares(2), Success: []*pb.RequestOp{txnOp(distinctPuts(2), nil)}}},
		{"same key in both branches", &pb.TxnRequest{Success: []*pb.RequestOp{putOp("a")}, Failure: []*pb.RequestOp{putOp("a")}}},
		{"same key in nested then and else", &pb.TxnRequest{Success: []*pb.RequestOp{txnOp([]*pb.RequestOp{putOp("a")}, []*pb.RequestOp{putOp("a")})}}},
		{"put outside deleted range", &pb.TxnRequest{Success: []*pb.RequestOp{delOp("a", "c"), putOp("c")}}},
		{"from-key delete is not checked (as etcd)", &pb.TxnRequest{Success: []*pb.RequestOp{delOp("a", "\x00"), putOp("b")}}},
		{"ranges may repeat", &pb.TxnRequest{Success: []*pb.RequestOp{rangeOp("a"), rangeOp("a"), putOp("a")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := c.kv.Txn(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if !resp.Succeeded {
				t.Fatal("response not from the member")
			}
		})
	}
}

// TestHeadersCompleted checks that the layer adds cluster id, member id and
// term to headers the member left without them, and keeps its revision.
func TestHeadersCompleted(t *testing.T) {
	f := newFakeServer()
	f.put("k", "v")
	c := serveFake(t, f, Config{})
	ctx := context.Background()
	want := &pb.ResponseHeader{ClusterId: fakeClusterID, MemberId: fakeMemberID, Revision: 2, RaftTerm: fakeTerm}

	headers := map[string]func() (*pb.ResponseHeader, error){
		"range": func() (*pb.ResponseHeader, error) {
			r, err := c.kv.Range(ctx, &pb.RangeRequest{Key: []byte("k")})
			return r.GetHeader(), err
		},
		"delete": func() (*pb.ResponseHeader, error) {
			r, err := c.kv.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("k")})
			return r.GetHeader(), err
		},
		"txn": func() (*pb.ResponseHeader, error) {
			r, err := c.kv.Txn(ctx, &pb.TxnRequest{})
			return r.GetHeader(), err
		},
		"compact": func() (*pb.ResponseHeader, error) {
			r, err := c.kv.Compact(ctx, &pb.CompactionRequest{Revision: 1})
			return r.GetHeader(), err
		},
		"alarm (member sent no header)": func() (*pb.ResponseHeader, error) {
			r, err := c.maint.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_GET})
			return r.GetHeader(), err
		},
		"status": func() (*pb.ResponseHeader, error) {
			r, err := c.maint.Status(ctx, &pb.StatusRequest{})
			return r.GetHeader(), err
		},
		"hash": func() (*pb.ResponseHeader, error) {
			r, err := c.maint.Hash(ctx, &pb.HashRequest{})
			return r.GetHeader(), err
		},
		"hashkv": func() (*pb.ResponseHeader, error) {
			r, err := c.maint.HashKV(ctx, &pb.HashKVRequest{Revision: 2})
			return r.GetHeader(), err
		},
	}
	for name, get := range headers {
		t.Run(name, func(t *testing.T) {
			h, err := get()
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(h, want) {
				t.Fatalf("header %v, want %v", h, want)
			}
		})
	}
	// etcd answers these two without any header.
	noHeader := map[string]func() (*pb.ResponseHeader, error){
		"defragment": func() (*pb.ResponseHeader, error) {
			r, err := c.maint.Defragment(ctx, &pb.DefragmentRequest{})
			return r.GetHeader(), err
		},
		"move leader": func() (*pb.ResponseHeader, error) {
			r, err := c.maint.MoveLeader(ctx, &pb.MoveLeaderRequest{TargetID: 2})
			return r.GetHeader(), err
		},
	}
	for name, get := range noHeader {
		t.Run(name, func(t *testing.T) {
			h, err := get()
			if err != nil {
				t.Fatal(err)
			}
			if h != nil {
				t.Fatalf("header %v, want none", h)
			}
		})
	}
}

func TestPutReachesMember(t *testing.T) {
	f := newFakeServer()
	c := serveFake(t, f, Config{})
	resp, err := c.kv.Put(context.Background(), &pb.PutRequest{Key: []byte("a"), Value: []byte("1")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Revision != 2 || resp.Header.MemberId != fakeMemberID {
		t.Fatalf("header %v", resp.Header)
	}
	got, err := c.kv.Range(context.Background(), &pb.RangeRequest{Key: []byte("a")})
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "1" {
		t.Fatalf("range after put: %v %v", got, err)
	}
}
