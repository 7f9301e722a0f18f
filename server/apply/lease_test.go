package apply

import (
	"errors"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/lease"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// TestLeaseLifecycle grants a lease, attaches keys by putting them with it,
// moves one key to no lease, and revokes: the revoke deletes exactly the
// keys still attached, in one revision.
func TestLeaseLifecycle(t *testing.T) {
	be, _ := backend.NewTmpBackend(t)
	kv := mvcc.New(zap.NewNop(), be, mvcc.StoreConfig{})
	t.Cleanup(func() { kv.Close() })
	lessor, err := lease.NewLessor(lease.Config{Backend: be, NewTxn: func() lease.TxnDeleter { return kv.Write() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lessor.Stop)
	a, err := New(Config{KV: kv, Backend: be, Lessor: lessor})
	if err != nil {
		t.Fatal(err)
	}
	apply := func(r *pb.InternalRaftRequest) *Result {
		t.Helper()
		return a.Apply(t.Context(), r)
	}

	res := apply(&pb.InternalRaftRequest{LeaseGrant: &pb.LeaseGrantRequest{ID: 7, TTL: 1}})
	if res.Err != nil || res.Resp.(*pb.LeaseGrantResponse).TTL != lease.DefaultMinLeaseTTL {
		t.Fatalf("grant: %v %v (TTL below the minimum is raised)", res.Resp, res.Err)
	}
	if res := apply(&pb.InternalRaftRequest{LeaseGrant: &pb.LeaseGrantRequest{ID: 7, TTL: 10}}); !errors.Is(res.Err, errs.ErrLeaseExists) {
		t.Fatalf("duplicate grant: %v", res.Err)
	}
	for _, k := range []string{"a", "b", "c"} {
		if res := apply(&pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte(k), Value: []byte("v"), Lease: 7}}); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	// "b" is put again without a lease: it leaves lease 7.
	apply(&pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("b"), Value: []byte("v2")}})
	if got := lessor.Lookup(7).Keys(); len(got) != 2 || got[0] != "a" || got[1] != "c" {
		t.Fatalf("lease keys = %v, want [a c]", got)
	}
	before := kv.Rev()
	if res := apply(&pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: 7}}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if kv.Rev() != before+1 {
		t.Fatalf("revoke moved the revision from %d to %d, want one revision", before, kv.Rev())
	}
	rr, err := a.Range(t.Context(), &pb.RangeRequest{Key: []byte("a"), RangeEnd: []byte("z")})
	if err != nil || len(rr.Kvs) != 1 || string(rr.Kvs[0].Key) != "b" {
		t.Fatalf("after revoke: %v %v, want only b", rr, err)
	}
	if res := apply(&pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: 7}}); !errors.Is(res.Err, errs.ErrLeaseNotFound) {
		t.Fatalf("second revoke: %v", res.Err)
	}
}
