package apply

import (
	"bytes"
	"context"
	"math"
	"sort"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// Range answers a RangeRequest from a read transaction at the store's
// current revision (or r.Revision). The member also calls it for reads that
// do not go through raft (serializable reads, and linearizable reads after
// the read barrier); it does not consult alarms, and it stops early with
// ctx's error when ctx is canceled.
func (a *Applier) Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	tr := a.kv.Read()
	defer tr.End()
	return executeRange(ctx, tr, r, tr.Rev())
}

// executeRange runs r against rv: fetch, filter, sort, cut to the limit.
// The header carries currentRev, the revision of the view, also when r reads
// an older revision: etcd reports the store's revision, not the one read.
func executeRange(ctx context.Context, rv mvcc.ReadView, r *pb.RangeRequest, currentRev int64) (*pb.RangeResponse, error) {
	rr, err := rv.Range(ctx, r.Key, rangeEnd(r.RangeEnd), mvcc.RangeOptions{
		Limit: fetchLimit(r),
		Rev:   r.Revision,
		Count: r.CountOnly,
	})
	if err != nil {
		return nil, err
	}
	kvs := filterByRevisions(rr.KVs, r)
	sortKVs(kvs, r.SortTarget, r.SortOrder)

	resp := &pb.RangeResponse{
		Header: &pb.ResponseHeader{Revision: currentRev},
		Count:  int64(rr.Count),
	}
	if r.Limit > 0 && int64(len(kvs)) > r.Limit {
		kvs = kvs[:r.Limit]
		resp.More = true
	}
	if r.KeysOnly {
		kvs = withoutValues(kvs)
	}
	resp.Kvs = kvs
	return resp, nil
}

// rangeEnd maps a request's range_end onto mvcc's: nil for a single key,
// "\x00" (kept as is) for every key >= key, else the exclusive end. An
// empty, non-nil range_end means a single key, as it does on the wire.
func rangeEnd(end []byte) []byte {
	if len(end) == 0 {
		return nil
	}
	return end
}

// fetchLimit is how many KVs to read from mvcc. With the store's key order
// kept and no filters, limit+1 is enough to know whether there are more.
// A filter or a real re-sort needs every key first. Like etcd, a sort target
// other than KEY with order NONE still reads only limit+1 keys in key order
// and then sorts those.
func fetchLimit(r *pb.RangeRequest) int64 {
	if !keepsKeyOrder(r.SortTarget, r.SortOrder) || hasRevisionFilters(r) {
		return 0
	}
	if r.Limit <= 0 {
		return 0
	}
	if r.Limit < math.MaxInt64 {
		return r.Limit + 1
	}
	return r.Limit
}

// keepsKeyOrder reports whether mvcc's ascending key order is already the
// order asked for (for the purpose of choosing the fetch limit).
func keepsKeyOrder(target pb.RangeRequest_SortTarget, order pb.RangeRequest_SortOrder) bool {
	return order == pb.RangeRequest_NONE ||
		(target == pb.RangeRequest_KEY && order == pb.RangeRequest_ASCEND)
}

func hasRevisionFilters(r *pb.RangeRequest) bool {
	return r.MinModRevision != 0 || r.MaxModRevision != 0 ||
		r.MinCreateRevision != 0 || r.MaxCreateRevision != 0
}

// filterByRevisions drops the KVs outside the request's mod/create revision
// bounds (0 = no bound). Count is not affected: it counts the whole range.
func filterByRevisions(kvs []*mvccpb.KeyValue, r *pb.RangeRequest) []*mvccpb.KeyValue {
	if !hasRevisionFilters(r) {
		return kvs
	}
	kept := kvs[:0]
	for _, kv := range kvs {
		if withinRevisions(kv, r) {
			kept = append(kept, kv)
		}
	}
	return kept
}

func withinRevisions(kv *mvccpb.KeyValue, r *pb.RangeRequest) bool {
	switch {
	case r.MaxModRevision != 0 && kv.ModRevision > r.MaxModRevision:
		return false
	case r.MinModRevision != 0 && kv.ModRevision < r.MinModRevision:
		return false
	case r.MaxCreateRevision != 0 && kv.CreateRevision > r.MaxCreateRevision:
		return false
	case r.MinCreateRevision != 0 && kv.CreateRevision < r.MinCreateRevision:
		return false
	}
	return true
}

// sortKVs orders kvs as requested. A target other than KEY with order NONE
// sorts ascending; KEY ascending or NONE is mvcc's order already. It uses
// sort.Sort (not a stable sort) on purpose: for equal sort keys the result
// is then the same permutation etcd returns.
func sortKVs(kvs []*mvccpb.KeyValue, target pb.RangeRequest_SortTarget, order pb.RangeRequest_SortOrder) {
	if target != pb.RangeRequest_KEY && order == pb.RangeRequest_NONE {
		order = pb.RangeRequest_ASCEND
	}
	if keepsKeyOrder(target, order) {
		return
	}
	var s sort.Interface = kvSorter{kvs: kvs, less: lessFunc(target)}
	switch order {
	case pb.RangeRequest_ASCEND:
		sort.Sort(s)
	case pb.RangeRequest_DESCEND:
		sort.Sort(sort.Reverse(s))
	}
}

// lessFunc returns the order on target; an unknown target keeps key order.
func lessFunc(target pb.RangeRequest_SortTarget) func(x, y *mvccpb.KeyValue) bool {
	switch target {
	case pb.RangeRequest_VERSION:
		return func(x, y *mvccpb.KeyValue) bool { return x.Version < y.Version }
	case pb.RangeRequest_CREATE:
		return func(x, y *mvccpb.KeyValue) bool { return x.CreateRevision < y.CreateRevision }
	case pb.RangeRequest_MOD:
		return func(x, y *mvccpb.KeyValue) bool { return x.ModRevision < y.ModRevision }
	case pb.RangeRequest_VALUE:
		return func(x, y *mvccpb.KeyValue) bool { return bytes.Compare(x.Value, y.Value) < 0 }
	default:
		return func(x, y *mvccpb.KeyValue) bool { return bytes.Compare(x.Key, y.Key) < 0 }
	}
}

type kvSorter struct {
	kvs  []*mvccpb.KeyValue
	less func(x, y *mvccpb.KeyValue) bool
}

func (s kvSorter) Len() int           { return len(s.kvs) }
func (s kvSorter) Swap(i, j int)      { s.kvs[i], s.kvs[j] = s.kvs[j], s.kvs[i] }
func (s kvSorter) Less(i, j int) bool { return s.less(s.kvs[i], s.kvs[j]) }

// withoutValues returns copies of kvs without their values (keys_only). It
// copies rather than clearing in place so KVs mvcc may share stay intact.
func withoutValues(kvs []*mvccpb.KeyValue) []*mvccpb.KeyValue {
	out := make([]*mvccpb.KeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = &mvccpb.KeyValue{
			Key:            kv.Key,
			CreateRevision: kv.CreateRevision,
			ModRevision:    kv.ModRevision,
			Version:        kv.Version,
			Lease:          kv.Lease,
		}
	}
	return out
}
