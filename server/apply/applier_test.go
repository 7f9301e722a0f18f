package apply

import (
	"context"
	"errors"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// leaseSet is a LeaseLookup over a fixed set of lease ids.
type leaseSet []int64

func (s leaseSet) Exists(id int64) bool {
	for _, l := range s {
		if l == id {
			return true
		}
	}
	return false
}

type testEnv struct {
	a    *Applier
	kv   *mvcc.Store
	be   backend.Backend
	path string
}

// newEnv opens a real backend and mvcc store and an Applier on them; cfg's
// KV, Backend and Logger are filled in.
func newEnv(t *testing.T, cfg Config) *testEnv {
	t.Helper()
	be, path := backend.NewTmpBackend(t)
	kv := mvcc.New(zaptest.NewLogger(t), be, mvcc.StoreConfig{})
	// Registered after NewTmpBackend's cleanup, so it runs first: the store
	// stops before its backend closes.
	t.Cleanup(func() { _ = kv.Close() })
	cfg.KV, cfg.Backend, cfg.Logger = kv, be, zaptest.NewLogger(t)
	a, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &testEnv{a: a, kv: kv, be: be, path: path}
}

func (e *testEnv) apply(r *pb.InternalRaftRequest) *Result {
	return e.a.Apply(context.Background(), r)
}

// mustApply applies r and fails the test on an error.
func (e *testEnv) mustApply(t *testing.T, r *pb.InternalRaftRequest) proto.Message {
	t.Helper()
	res := e.apply(r)
	if res.Err != nil {
		t.Fatalf("apply %v: %v", r, res.Err)
	}
	return res.Resp
}

func (e *testEnv) put(t *testing.T, key, value string) *pb.PutResponse {
	t.Helper()
	return e.mustApply(t, putReq(&pb.PutRequest{Key: []byte(key), Value: []byte(value)})).(*pb.PutResponse)
}

func (e *testEnv) get(t *testing.T, key string) *mvccpb.KeyValue {
	t.Helper()
	resp, err := e.a.Range(context.Background(), &pb.RangeRequest{Key: []byte(key)})
	if err != nil {
		t.Fatalf("range %q: %v", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	return resp.Kvs[0]
}

func putReq(p *pb.PutRequest) *pb.InternalRaftRequest { return &pb.InternalRaftRequest{Put: p} }
func txnReq(t *pb.TxnRequest) *pb.InternalRaftRequest { return &pb.InternalRaftRequest{Txn: t} }
func rangeReq(r *pb.RangeRequest) *pb.InternalRaftRequest {
	return &pb.InternalRaftRequest{Range: r}
}
func deleteReq(d *pb.DeleteRangeRequest) *pb.InternalRaftRequest {
	return &pb.InternalRaftRequest{DeleteRange: d}
}

func keysOf(kvs []*mvccpb.KeyValue) []string {
	keys := make([]string, len(kvs))
	for i, kv := range kvs {
		keys[i] = string(kv.Key)
	}
	return keys
}

func TestNewRequiresStores(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without KV and Backend: want an error")
	}
}

func TestApplyUnsupportedRequest(t *testing.T) {
	e := newEnv(t, Config{})
	tests := []struct {
		name string
		req  *pb.InternalRaftRequest
		want string
	}{
		{"empty", &pb.InternalRaftRequest{ID: 7}, "empty request"},
		{"auth", &pb.InternalRaftRequest{AuthEnable: &pb.AuthEnableRequest{}}, "auth_enable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.apply(tt.req)
			if !errors.Is(res.Err, ErrUnsupportedRequest) {
				t.Fatalf("err = %v, want ErrUnsupportedRequest", res.Err)
			}
			if got := res.Err.Error(); got != ErrUnsupportedRequest.Error()+": "+tt.want {
				t.Errorf("err = %q", got)
			}
			if res.Resp != nil {
				t.Errorf("resp = %v, want nil", res.Resp)
			}
		})
	}
}

func TestCompaction(t *testing.T) {
	e := newEnv(t, Config{})
	for _, v := range []string{"1", "2", "3"} {
		e.put(t, "k", v) // revisions 2, 3, 4
	}

	res := e.apply(&pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: 3, Physical: true}})
	if res.Err != nil {
		t.Fatalf("compact: %v", res.Err)
	}
	if res.Physc == nil {
		t.Fatal("Physc is nil")
	}
	<-res.Physc
	if got := res.Resp.(*pb.CompactionResponse).Header.Revision; got != 4 {
		t.Errorf("header revision = %d, want 4", got)
	}

	_, err := e.a.Range(context.Background(), &pb.RangeRequest{Key: []byte("k"), Revision: 2})
	if !errors.Is(err, errs.ErrCompacted) {
		t.Errorf("range at compacted revision: err = %v, want ErrCompacted", err)
	}

	tests := []struct {
		name string
		rev  int64
		want error
	}{
		{"again at the compacted revision", 3, errs.ErrCompacted},
		{"future revision", 9, errs.ErrFutureRev},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.apply(&pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: tt.rev}})
			if !errors.Is(res.Err, tt.want) {
				t.Errorf("err = %v, want %v", res.Err, tt.want)
			}
			if res.Resp != nil {
				t.Errorf("resp = %v, want nil", res.Resp)
			}
		})
	}
}

// A canceled context must not change what a committed request does: mvcc
// stops reads on cancellation, which would flip compares on one member only.
func TestApplyIgnoresCancellation(t *testing.T) {
	e := newEnv(t, Config{})
	e.put(t, "k", "v")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := e.a.Apply(ctx, txnReq(&pb.TxnRequest{
		Compare: []*pb.Compare{cmpValue("k", "", pb.Compare_EQUAL, "v")},
		Success: []*pb.RequestOp{opPutReq(&pb.PutRequest{Key: []byte("k"), Value: []byte("w"), PrevKv: true})},
	}))
	if res.Err != nil || !res.Resp.(*pb.TxnResponse).Succeeded {
		t.Fatalf("resp %v err %v, want success", res.Resp, res.Err)
	}
	if got := string(e.get(t, "k").Value); got != "w" {
		t.Errorf("k = %q, want w", got)
	}
}
