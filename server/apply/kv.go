package apply

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// put applies a Put on its own write transaction. The lease is checked
// before the transaction opens and the previous KV (for ignore_* and
// prev_kv) inside it; on error nothing is written.
func (a *Applier) put(ctx context.Context, p *pb.PutRequest) (*pb.PutResponse, error) {
	if err := a.checkLease(p.Lease); err != nil {
		return nil, err
	}
	tw := a.kv.Write()
	defer a.endWrite(tw)
	prev, err := previousKV(ctx, tw, p)
	if err != nil {
		return nil, err
	}
	resp := newPutResponse()
	writePut(tw, p, prev, resp)
	return resp, nil
}

// checkLease fails with errs.ErrLeaseNotFound when a lease is named but
// does not exist. Lease 0 means no lease.
func (a *Applier) checkLease(id int64) error {
	if id == 0 {
		return nil
	}
	if a.leases == nil || !a.leases.Exists(id) {
		return errs.ErrLeaseNotFound
	}
	return nil
}

// previousKV reads the key's current KV when the Put needs it: for
// prev_kv, and for ignore_value/ignore_lease, which require the key to
// exist (errs.ErrKeyNotFound otherwise). It returns nil when not needed or
// absent.
func previousKV(ctx context.Context, rv mvcc.ReadView, p *pb.PutRequest) (*mvccpb.KeyValue, error) {
	needsPrev := p.IgnoreValue || p.IgnoreLease
	if !needsPrev && !p.PrevKv {
		return nil, nil
	}
	rr, err := rv.Range(ctx, p.Key, nil, mvcc.RangeOptions{})
	if err != nil {
		return nil, err
	}
	if len(rr.KVs) == 0 {
		if needsPrev {
			return nil, errs.ErrKeyNotFound
		}
		return nil, nil
	}
	return rr.KVs[0], nil
}

// putAnswer holds a put's response and its header, which every put
// allocates, in one allocation.
type putAnswer struct {
	resp pb.PutResponse
	hdr  pb.ResponseHeader
}

// newPutResponse returns an empty PutResponse with an empty header.
func newPutResponse() *pb.PutResponse {
	m := &putAnswer{}
	m.resp.Header = &m.hdr
	return &m.resp
}

// writePut writes p in tw and fills resp, whose header must be set. prev
// must be the key's current KV when p has ignore_value, ignore_lease or
// prev_kv set (previousKV guarantees it).
func writePut(tw mvcc.WriteView, p *pb.PutRequest, prev *mvccpb.KeyValue, resp *pb.PutResponse) {
	value, lease := p.Value, p.Lease
	if p.IgnoreValue {
		value = prev.Value
	}
	if p.IgnoreLease {
		lease = prev.Lease
	}
	if p.PrevKv {
		resp.PrevKv = prev
	}
	resp.Header.Revision = tw.Put(p.Key, value, lease)
}

// deleteRange applies a DeleteRange on its own write transaction.
func (a *Applier) deleteRange(ctx context.Context, dr *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	tw := a.kv.Write()
	defer a.endWrite(tw)
	return executeDelete(ctx, tw, tw, dr)
}

// executeDelete deletes dr's range in wv, first reading the KVs it removes
// from rv when prev_kv is asked for. The header revision is the one mvcc
// reports: unchanged when nothing was deleted and nothing else was written.
func executeDelete(ctx context.Context, rv mvcc.ReadView, wv mvcc.WriteView, dr *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	resp := &pb.DeleteRangeResponse{Header: &pb.ResponseHeader{}}
	end := rangeEnd(dr.RangeEnd)
	if dr.PrevKv {
		rr, err := rv.Range(ctx, dr.Key, end, mvcc.RangeOptions{})
		if err != nil {
			return nil, err
		}
		resp.PrevKvs = rr.KVs
	}
	resp.Deleted, resp.Header.Revision = wv.DeleteRange(dr.Key, end)
	return resp, nil
}
