package v3rpc

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/protobuf/proto"
)

// hangTimeout bounds one request; it only catches hangs.
const hangTimeout = 10 * time.Second

// call runs f with a bound on its duration.
func call[T any](t *testing.T, f func(context.Context) (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f(context.Background())
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(hangTimeout):
		t.Fatalf("request still running after %v", hangTimeout)
	}
	var zero T
	return zero, nil
}

// expectErr fails t unless err is want (both nil, or the same error).
func expectErr(t *testing.T, req proto.Message, err, want error) {
	t.Helper()
	if err != nil {
		checkErr(t, err)
	}
	if (err == nil) != (want == nil) || (want != nil && !errors.Is(err, want)) {
		t.Fatalf("%T %v: error %v, model expects %v", req, req, err, want)
	}
}

// checkStore compares the whole store with the model's current state.
func (fx *kvFixture) checkStore(t *testing.T) {
	t.Helper()
	if fx.kv.Rev() != fx.model.rev() {
		t.Fatalf("store at revision %d, model at %d", fx.kv.Rev(), fx.model.rev())
	}
	all := &pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}}
	resp, err := fx.ks.Range(context.Background(), all)
	if err != nil {
		t.Fatal(err)
	}
	want := keysIn(fx.model.current(), all.Key, all.RangeEnd)
	if !slices.EqualFunc(resp.Kvs, want, func(a, b *mvccpb.KeyValue) bool { return proto.Equal(a, b) }) {
		t.Fatalf("store holds %v, model %v", resp.Kvs, want)
	}
}

func rangeValidation(r *pb.RangeRequest) error {
	switch {
	case len(r.Key) == 0:
		return rpctypes.ErrGRPCEmptyKey
	case r.SortOrder > pb.RangeRequest_DESCEND || r.SortTarget > pb.RangeRequest_VALUE:
		return rpctypes.ErrGRPCInvalidSortOption
	}
	return nil
}

func (fx *kvFixture) checkRange(t *testing.T, r *pb.RangeRequest) {
	resp, err := call(t, func(ctx context.Context) (*pb.RangeResponse, error) { return fx.ks.Range(ctx, r) })
	want := fx.model.rangeAt(fx.model.current(), r)
	if verr := rangeValidation(r); verr != nil {
		want.err = verr
	}
	expectErr(t, r, err, want.err)
	if err == nil {
		matchRange(t, r, resp, want)
		if resp.Header.GetRevision() != fx.model.rev() {
			t.Fatalf("header revision %d, store at %d", resp.Header.GetRevision(), fx.model.rev())
		}
	}
	fx.checkStore(t)
}

// matchRange compares a Range response with the model's answer. Where the
// sort has ties, etcd may return tied KVs in any order, and pick any of
// them at the limit: the sort keys must match in order, and every KV must
// be one the model found.
func matchRange(t *testing.T, r *pb.RangeRequest, got *pb.RangeResponse, want rangeResult) {
	t.Helper()
	if got.Count != want.count || got.More != want.more || len(got.Kvs) != len(want.kvs) {
		t.Fatalf("range %v: count %d more %v %d kvs; model: count %d more %v %d kvs",
			r, got.Count, got.More, len(got.Kvs), want.count, want.more, len(want.kvs))
	}
	found := map[string]*mvccpb.KeyValue{}
	for _, kv := range want.all {
		found[string(kv.Key)] = kv
	}
	for i, kv := range got.Kvs {
		m, ok := found[string(kv.Key)]
		if !ok {
			t.Fatalf("range %v: returned %v, which the model does not select", r, kv)
		}
		if !bytes.Equal(want.sortKey(m), want.sortKey(want.kvs[i])) {
			t.Fatalf("range %v: kv %d is %v, model sorts %v there", r, i, kv, want.kvs[i])
		}
		if r.KeysOnly {
			m = proto.Clone(m).(*mvccpb.KeyValue)
			m.Value = nil
		}
		if !proto.Equal(kv, m) {
			t.Fatalf("range %v: returned %v, model has %v", r, kv, m)
		}
	}
}

func putValidation(p *pb.PutRequest) error {
	switch {
	case len(p.Key) == 0:
		return rpctypes.ErrGRPCEmptyKey
	case p.IgnoreValue && len(p.Value) != 0:
		return rpctypes.ErrGRPCValueProvided
	case p.IgnoreLease && p.Lease != 0:
		return rpctypes.ErrGRPCLeaseProvided
	}
	return nil
}

func (fx *kvFixture) checkPut(t *testing.T, p *pb.PutRequest) {
	resp, err := call(t, func(ctx context.Context) (*pb.PutResponse, error) { return fx.ks.Put(ctx, p) })
	ts := fx.model.begin()
	want := putValidation(p)
	if want == nil {
		want = fx.model.checkPut(fx.model.current(), ts, p)
	}
	expectErr(t, p, err, want)
	if err == nil {
		prev := applyPut(ts, p)
		fx.model.commit(ts)
		if !p.PrevKv {
			prev = nil
		}
		if !proto.Equal(resp.PrevKv, prev) || resp.Header.GetRevision() != fx.model.rev() {
			t.Fatalf("put %v: prev_kv %v at revision %d; model: %v at %d", p, resp.PrevKv, resp.Header.GetRevision(), prev, fx.model.rev())
		}
	}
	fx.checkStore(t)
}

func (fx *kvFixture) checkDelete(t *testing.T, d *pb.DeleteRangeRequest) {
	resp, err := call(t, func(ctx context.Context) (*pb.DeleteRangeResponse, error) { return fx.ks.DeleteRange(ctx, d) })
	var want error
	if len(d.Key) == 0 {
		want = rpctypes.ErrGRPCEmptyKey
	}
	expectErr(t, d, err, want)
	if err == nil {
		ts := fx.model.begin()
		matchDelete(t, d, resp, ts.deleteRange(d.Key, d.RangeEnd))
		fx.model.commit(ts)
		if resp.Header.GetRevision() != fx.model.rev() {
			t.Fatalf("delete %v: header revision %d, model %d", d, resp.Header.GetRevision(), fx.model.rev())
		}
	}
	fx.checkStore(t)
}

func matchDelete(t *testing.T, d *pb.DeleteRangeRequest, got *pb.DeleteRangeResponse, gone []*mvccpb.KeyValue) {
	t.Helper()
	wantPrev := gone
	if !d.PrevKv {
		wantPrev = nil
	}
	if got.Deleted != int64(len(gone)) || !slices.EqualFunc(got.PrevKvs, wantPrev, func(a, b *mvccpb.KeyValue) bool { return proto.Equal(a, b) }) {
		t.Fatalf("delete %v: deleted %d, prev kvs %v; model deletes %v", d, got.Deleted, got.PrevKvs, gone)
	}
}

func (fx *kvFixture) checkTxn(t *testing.T, r *pb.TxnRequest) {
	resp, err := call(t, func(ctx context.Context) (*pb.TxnResponse, error) { return fx.ks.Txn(ctx, r) })
	// The op budget and duplicate rules are the validator's own; they are
	// trusted here, but must refuse with their errors before anything runs.
	want := txnFlaws(r, fuzzMaxTxnOps)
	if want == nil {
		want = checkTxnDuplicates(r)
	}
	pre := fx.model.current()
	if want == nil {
		want = fx.model.checkTxn(pre, r, fx.model.begin())
	}
	expectErr(t, r, err, want)
	if err == nil {
		ts := fx.model.begin()
		fx.matchTxn(t, pre, r, resp, ts)
		fx.model.commit(ts)
	}
	fx.checkStore(t)
}

// matchTxn runs the chosen ops on the model's txn state and compares each
// response.
func (fx *kvFixture) matchTxn(t *testing.T, pre map[string]*mvccpb.KeyValue, r *pb.TxnRequest, got *pb.TxnResponse, ts *txnState) {
	t.Helper()
	succeeded, ops := chosenOps(pre, r)
	if got.Succeeded != succeeded || len(got.Responses) != len(ops) {
		t.Fatalf("txn %v: succeeded %v with %d responses; model %v with %d ops", r, got.Succeeded, len(got.Responses), succeeded, len(ops))
	}
	for i, op := range ops {
		switch req := op.Request.(type) {
		case *pb.RequestOp_RequestRange:
			matchRange(t, req.RequestRange, nonNil(t, got.Responses[i].GetResponseRange()), fx.model.rangeAt(ts.view, req.RequestRange))
		case *pb.RequestOp_RequestPut:
			prev := applyPut(ts, req.RequestPut)
			if !req.RequestPut.PrevKv {
				prev = nil
			}
			if gp := nonNil(t, got.Responses[i].GetResponsePut()); !proto.Equal(gp.PrevKv, prev) {
				t.Fatalf("put %v in txn: prev_kv %v, model %v", req.RequestPut, gp.PrevKv, prev)
			}
		case *pb.RequestOp_RequestDeleteRange:
			gone := ts.deleteRange(req.RequestDeleteRange.Key, req.RequestDeleteRange.RangeEnd)
			matchDelete(t, req.RequestDeleteRange, nonNil(t, got.Responses[i].GetResponseDeleteRange()), gone)
		case *pb.RequestOp_RequestTxn:
			fx.matchTxn(t, pre, req.RequestTxn, nonNil(t, got.Responses[i].GetResponseTxn()), ts)
		}
	}
}

func nonNil[T any](t *testing.T, v *T) *T {
	t.Helper()
	if v == nil {
		t.Fatalf("missing %T response", v)
	}
	return v
}
