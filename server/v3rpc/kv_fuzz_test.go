package v3rpc

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/pkg/fuzztest"
	"github.com/cairnkv/cairn/server/apply"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// fuzzMaxTxnOps keeps fuzzed Txns small enough to reach the op limit.
const fuzzMaxTxnOps = 4

// fuzzLease is the one lease that exists.
const fuzzLease = 7

// storeServer serves the KV calls from a real applier and mvcc store, as
// the member does once a request is committed; the other calls come from
// fakeServer and are not used.
type storeServer struct {
	*fakeServer
	a *apply.Applier
}

type oneLease struct{}

func (oneLease) Exists(id int64) bool { return id == fuzzLease }

func (s *storeServer) Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	return s.a.Range(ctx, r)
}

func (s *storeServer) apply(r *pb.InternalRaftRequest) (any, error) {
	res := s.a.Apply(context.Background(), r)
	if res.Err != nil {
		return nil, res.Err
	}
	return res.Resp, nil
}

func (s *storeServer) Put(_ context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	resp, err := s.apply(&pb.InternalRaftRequest{Put: r})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.PutResponse), nil
}

func (s *storeServer) DeleteRange(_ context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	resp, err := s.apply(&pb.InternalRaftRequest{DeleteRange: r})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.DeleteRangeResponse), nil
}

func (s *storeServer) Txn(_ context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	resp, err := s.apply(&pb.InternalRaftRequest{Txn: r})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.TxnResponse), nil
}

// kvFixture is a fresh store with a short history, and the model of it.
type kvFixture struct {
	ks    *kvServer
	kv    mvcc.KV
	model *kvModel
}

// seedHistory is the history every fuzzed request meets: overwrites, a
// delete, a re-created key, the edges of the key space, a leased key.
var seedHistory = []*pb.InternalRaftRequest{
	{Put: &pb.PutRequest{Key: []byte("a"), Value: []byte("1"), Lease: fuzzLease}},
	{Put: &pb.PutRequest{Key: []byte("b"), Value: []byte("2")}},
	{Put: &pb.PutRequest{Key: []byte("a"), Value: []byte("3")}},
	{Put: &pb.PutRequest{Key: []byte("a\x00"), Value: []byte("4")}},
	{DeleteRange: &pb.DeleteRangeRequest{Key: []byte("b")}},
	{Put: &pb.PutRequest{Key: []byte("\xff"), Value: []byte("5")}},
	{Put: &pb.PutRequest{Key: []byte("b"), Value: []byte("6")}},
	{Put: &pb.PutRequest{Key: []byte("\x00"), Value: []byte{}}},
}

// fuzzCompactAt is the revision the fixture compacts at when asked.
const fuzzCompactAt = 4

func newKVFixture(t *testing.T, compact bool) *kvFixture {
	be, err := backend.Open(backend.Config{Path: filepath.Join(fuzztest.ScratchDir(t), "db"), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	kv := mvcc.New(zap.NewNop(), be, mvcc.StoreConfig{})
	t.Cleanup(func() {
		_ = kv.Close()
		_ = be.Close()
	})
	a, err := apply.New(apply.Config{KV: kv, Backend: be, Leases: oneLease{}})
	if err != nil {
		t.Fatal(err)
	}
	ss := &storeServer{fakeServer: newFakeServer(), a: a}
	f := &kvFixture{ks: newKVServer(ss, ss, fuzzMaxTxnOps, DefaultMaxRequestBytes), kv: kv, model: newKVModel(fuzzLease)}
	for _, r := range seedHistory {
		if res := a.Apply(context.Background(), r); res.Err != nil {
			t.Fatal(res.Err)
		}
		ts := f.model.begin()
		if r.Put != nil {
			ts.put(r.Put.Key, r.Put.Value, r.Put.Lease)
		} else {
			ts.deleteRange(r.DeleteRange.Key, r.DeleteRange.RangeEnd)
		}
		f.model.commit(ts)
	}
	if compact {
		res := a.Apply(context.Background(), &pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: fuzzCompactAt}})
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		<-res.Physc
		f.model.compacted = fuzzCompactAt
	}
	if kv.Rev() != f.model.rev() {
		t.Fatalf("store at revision %d, model at %d", kv.Rev(), f.model.rev())
	}
	return f
}

// FuzzKVRequest sends one Range, Put, DeleteRange or Txn built from fuzz
// bytes (see requestReader) through the KV service's validation to a real
// applier and store. Every request must get one of etcd's errors or the
// answer the model gives, and a failed request must change nothing.
func FuzzKVRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, compact bool, data []byte) {
		fx := newKVFixture(t, compact)
		rr := &requestReader{b: data}
		switch rr.byte() % 4 {
		case 0:
			fx.checkRange(t, rr.rangeRequest())
		case 1:
			fx.checkPut(t, rr.putRequest())
		case 2:
			fx.checkDelete(t, rr.deleteRequest())
		default:
			fx.checkTxn(t, rr.txnRequest(0))
		}
	})
}

// checkErr fails t unless err maps to one of etcd's gRPC errors.
func checkErr(t *testing.T, err error) {
	t.Helper()
	st, _ := status.FromError(toGRPCError(err))
	if st.Code() == codes.Unknown || st.Code() == codes.Internal {
		t.Fatalf("error %q is none of etcd's", err)
	}
}

// requestReader turns fuzz bytes into request fields; past the end it
// reads zeros, so every input is a request.
type requestReader struct{ b []byte }

func (r *requestReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *requestReader) bool() bool { return r.byte()&1 == 1 }

// keyAlphabet makes keys collide with the fixture's and each other.
var keyAlphabet = [4]byte{0x00, 'a', 'b', 0xff}

// key reads a length (0-3) and that many symbols of keyAlphabet.
func (r *requestReader) key() []byte {
	n := int(r.byte() % 4)
	k := []byte{}
	for range n {
		k = append(k, keyAlphabet[r.byte()%4])
	}
	return k
}

// rangeEnd reads an end: none, "\x00" (from key) or a key.
func (r *requestReader) rangeEnd() []byte {
	switch r.byte() % 3 {
	case 0:
		return nil
	case 1:
		return []byte{0}
	}
	return r.key()
}

// revisionValues are the revisions and limits fuzzed fields take: around
// the fixture's history, its compaction, negative and huge.
var revisionValues = []int64{0, 0, 1, 2, 3, 4, 5, 6, 8, 9, 10, -1, -2, math.MaxInt64, math.MinInt64}

func (r *requestReader) revision() int64 {
	return revisionValues[int(r.byte())%len(revisionValues)]
}

func (r *requestReader) rangeRequest() *pb.RangeRequest {
	return &pb.RangeRequest{
		Key: r.key(), RangeEnd: r.rangeEnd(), Revision: r.revision(), Limit: r.revision(),
		SortOrder:  pb.RangeRequest_SortOrder(r.byte() % 4),
		SortTarget: pb.RangeRequest_SortTarget(r.byte() % 6),
		KeysOnly:   r.bool(), CountOnly: r.bool(), Serializable: r.bool(),
		MinModRevision: r.revision(), MaxModRevision: r.revision(),
		MinCreateRevision: r.revision(), MaxCreateRevision: r.revision(),
	}
}

func (r *requestReader) putRequest() *pb.PutRequest {
	leases := [4]int64{0, fuzzLease, 0, 99}
	return &pb.PutRequest{
		Key: r.key(), Value: r.key(), Lease: leases[r.byte()%4],
		PrevKv: r.bool(), IgnoreValue: r.bool(), IgnoreLease: r.bool(),
	}
}

func (r *requestReader) deleteRequest() *pb.DeleteRangeRequest {
	return &pb.DeleteRangeRequest{Key: r.key(), RangeEnd: r.rangeEnd(), PrevKv: r.bool()}
}

func (r *requestReader) compare() *pb.Compare {
	c := &pb.Compare{
		Key: r.key(), RangeEnd: r.rangeEnd(),
		Target: pb.Compare_CompareTarget(r.byte() % 6),
		Result: pb.Compare_CompareResult(r.byte() % 5),
	}
	// The union may disagree with the target: etcd then compares with zero.
	switch r.byte() % 5 {
	case 0:
		c.TargetUnion = &pb.Compare_Version{Version: r.revision()}
	case 1:
		c.TargetUnion = &pb.Compare_CreateRevision{CreateRevision: r.revision()}
	case 2:
		c.TargetUnion = &pb.Compare_ModRevision{ModRevision: r.revision()}
	case 3:
		c.TargetUnion = &pb.Compare_Value{Value: r.key()}
	default:
		c.TargetUnion = &pb.Compare_Lease{Lease: r.revision()}
	}
	return c
}

// txnRequest reads up to 5 compares and ops per branch (beyond the limit
// of 4), nested at most two levels deep.
func (r *requestReader) txnRequest(depth int) *pb.TxnRequest {
	t := &pb.TxnRequest{}
	for range r.byte() % 6 {
		t.Compare = append(t.Compare, r.compare())
	}
	for _, branch := range []*[]*pb.RequestOp{&t.Success, &t.Failure} {
		for range r.byte() % 6 {
			*branch = append(*branch, r.requestOp(depth))
		}
	}
	return t
}

func (r *requestReader) requestOp(depth int) *pb.RequestOp {
	switch r.byte() % 5 {
	case 0:
		return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: r.rangeRequest()}}
	case 1:
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: r.putRequest()}}
	case 2:
		return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: r.deleteRequest()}}
	case 3:
		if depth < 2 {
			return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: r.txnRequest(depth + 1)}}
		}
	}
	return &pb.RequestOp{} // no request set
}

// TestFuzzSeeds keeps the committed seed corpus equal to its generator:
// one request of each kind, spelled in requestReader's order. Regenerate
// with CAIRN_WRITE_FUZZ_SEEDS=1 go test -run TestFuzzSeeds.
func TestFuzzSeeds(t *testing.T) {
	const (
		nul, a, b = 0, 1, 2 // keyAlphabet symbols
		fromKey   = 1       // rangeEnd: "\x00"
		someKey   = 2       // rangeEnd: a key follows
	)
	rangeAll := []byte{0, 1, nul, fromKey, 0, 0, byte(pb.RangeRequest_DESCEND), byte(pb.RangeRequest_MOD)}
	putWithPrev := []byte{1, 1, a, 1, b, 1, 1}
	deleteRange := []byte{2, 1, a, someKey, 1, b, 1}
	txn := []byte{3,
		1, 1, a, 0, byte(pb.Compare_VERSION), byte(pb.Compare_EQUAL), 0, 4, // compare version(a) = 3
		1, 1, 1, a, 1, b, 0, 1, // success: put a=b with prev_kv
		1, 0, 1, a} // failure: range a
	seeds := []fuzztest.Seed{
		{Name: "range-all-by-mod-desc", Args: []any{false, rangeAll}},
		{Name: "range-all-compacted", Args: []any{true, rangeAll}},
		{Name: "put-prev-kv", Args: []any{false, putWithPrev}},
		{Name: "delete-range", Args: []any{true, deleteRange}},
		{Name: "txn-compare-version", Args: []any{false, txn}},
	}
	fuzztest.Check(t, "FuzzKVRequest", seeds)
}
