package apply

import (
	"errors"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/errs"
)

func TestRequestCost(t *testing.T) {
	put := func(k, v string) *pb.RequestOp { return opPut(k, v) }
	tests := []struct {
		name string
		req  proto.Message
		want int64
	}{
		{"put", &pb.PutRequest{Key: []byte("key"), Value: []byte("value")}, 256 + 3 + 5},
		{"empty put", &pb.PutRequest{}, 256},
		{"lease grant", &pb.LeaseGrantRequest{TTL: 10}, 64},
		{"range", &pb.RangeRequest{Key: []byte("k")}, 0},
		{"delete", &pb.DeleteRangeRequest{Key: []byte("k")}, 0},
		{"txn of reads and deletes", &pb.TxnRequest{Success: []*pb.RequestOp{opDelete("k", ""), opRange(&pb.RangeRequest{})}}, 0},
		{"txn sums a branch", &pb.TxnRequest{Success: []*pb.RequestOp{put("a", "1"), put("bb", "22")}}, 256 + 2 + 256 + 4},
		{"txn takes the costlier branch", &pb.TxnRequest{
			Success: []*pb.RequestOp{put("a", "1")},
			Failure: []*pb.RequestOp{put("a", "1"), put("b", "2")},
		}, 2 * 258},
		{"txn counts nested puts", &pb.TxnRequest{Success: []*pb.RequestOp{put("a", "1"), opTxn(&pb.TxnRequest{
			Success: []*pb.RequestOp{put("b", "2")},
			Failure: []*pb.RequestOp{put("c", "33")},
		})}}, 258 + 259},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := requestCost(tt.req); got != tt.want {
				t.Errorf("cost = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestQuotaAvailable(t *testing.T) {
	e := newEnv(t, Config{})
	size := e.be.Size()
	put := &pb.PutRequest{Key: []byte("k"), Value: []byte("v")} // cost 258
	tests := []struct {
		name  string
		quota int64
		req   proto.Message
		want  bool
	}{
		{"fits", size + 259, put, true},
		{"exactly full does not fit", size + 258, put, false},
		{"over", size, put, false},
		{"requests that write nothing always fit", 1, &pb.RangeRequest{}, true},
		{"delete-only txn fits", 1, &pb.TxnRequest{Success: []*pb.RequestOp{opDelete("k", "")}}, true},
		{"lease grant", size + 64, &pb.LeaseGrantRequest{}, false},
		{"negative quota disables", -1, put, true},
		{"zero is the 2 GiB default", 0, put, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(Config{KV: e.kv, Backend: e.be, QuotaBackendBytes: tt.quota})
			if err != nil {
				t.Fatal(err)
			}
			if got := a.QuotaAvailable(tt.req); got != tt.want {
				t.Errorf("available = %v, want %v (size %d)", got, tt.want, size)
			}
		})
	}
}

func TestQuotaBytes(t *testing.T) {
	e := newEnv(t, Config{})
	for configured, want := range map[int64]int64{0: 2 << 30, 4096: 4096, -1: -1} {
		a, err := New(Config{KV: e.kv, Backend: e.be, QuotaBackendBytes: configured})
		if err != nil {
			t.Fatal(err)
		}
		if got := a.QuotaBytes(); got != want {
			t.Errorf("QuotaBytes(%d) = %d, want %d", configured, got, want)
		}
	}
}

func TestOverQuotaWritesApplyAndFail(t *testing.T) {
	tests := []struct {
		name    string
		req     *pb.InternalRaftRequest
		wantErr error
		wantRev int64
	}{
		{"put", putReq(&pb.PutRequest{Key: []byte("k"), Value: []byte("v")}), errs.ErrNoSpace, 2},
		{"txn with a put", txnReq(&pb.TxnRequest{Success: []*pb.RequestOp{opPut("k", "v")}}), errs.ErrNoSpace, 2},
		{"txn with a put in the other branch", txnReq(&pb.TxnRequest{Failure: []*pb.RequestOp{opPut("k", "v")}}), errs.ErrNoSpace, 1},
		{"read-only txn", txnReq(&pb.TxnRequest{Success: []*pb.RequestOp{opRange(&pb.RangeRequest{Key: []byte("k")})}}), nil, 1},
		{"delete", deleteReq(&pb.DeleteRangeRequest{Key: []byte("k")}), nil, 1},
		{"failing put keeps its own error", putReq(&pb.PutRequest{Key: []byte("k"), IgnoreValue: true}), errs.ErrKeyNotFound, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Config{QuotaBackendBytes: 1})
			res := e.apply(tt.req)
			if !errors.Is(res.Err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", res.Err, tt.wantErr)
			}
			if rev := e.kv.Rev(); rev != tt.wantRev {
				t.Errorf("revision = %d, want %d", rev, tt.wantRev)
			}
			// Over quota the write is applied and its response kept.
			if errors.Is(tt.wantErr, errs.ErrNoSpace) && res.Resp == nil {
				t.Error("response dropped")
			}
		})
	}
}

func TestNoQuota(t *testing.T) {
	e := newEnv(t, Config{QuotaBackendBytes: -1})
	if res := e.apply(putReq(&pb.PutRequest{Key: []byte("k"), Value: make([]byte, 1<<16)})); res.Err != nil {
		t.Errorf("err = %v, want nil", res.Err)
	}
}
