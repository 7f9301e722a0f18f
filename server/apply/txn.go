package apply

import (
	"bytes"
	"cmp"
	"context"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// A Txn runs in three steps on one mvcc transaction:
//
//  1. evaluate: every compare, the nested Txns' included, is judged against
//     the state before the Txn; the result is a tree of branches.
//  2. check: the ops of the chosen branches are validated (leases, keys for
//     ignore_*, read revisions) so that a failing Txn writes nothing.
//  3. execute: the ops run in order; all writes share one revision.

// branch is a Txn whose compares have been judged: the ops that will run
// and, for each nested Txn among them, its own branch.
type branch struct {
	succeeded bool
	ops       []*pb.RequestOp
	nested    []*branch // nested[i] is set when ops[i] is a Txn
}

// txnView is what a Txn runs on: a write transaction, or a read
// transaction wrapped by readOnlyView for Txns with reads only.
type txnView interface {
	mvcc.ReadView
	mvcc.WriteView
	Changes() []*mvccpb.KeyValue
}

// readOnlyView lets a read transaction run a Txn that has only Range ops.
type readOnlyView struct{ mvcc.ReadView }

// Put and DeleteRange are unreachable: txn chooses readOnlyView only when
// isReadOnly holds, which admits Range ops only.
func (readOnlyView) Put([]byte, []byte, int64) int64 {
	panic("apply: Put in a read-only txn")
}
func (readOnlyView) DeleteRange([]byte, []byte) (int64, int64) {
	panic("apply: DeleteRange in a read-only txn")
}
func (readOnlyView) Changes() []*mvccpb.KeyValue { return nil }

// txn applies a Txn: a read transaction when it only reads, else the write
// transaction.
func (a *Applier) txn(ctx context.Context, rt *pb.TxnRequest) (*pb.TxnResponse, error) {
	if isReadOnly(rt) {
		tr := a.kv.Read()
		defer tr.End()
		return a.runTxn(ctx, readOnlyView{tr}, rt)
	}
	tw := a.kv.Write()
	defer a.endWrite(tw)
	return a.runTxn(ctx, tw, rt)
}

func (a *Applier) runTxn(ctx context.Context, tv txnView, rt *pb.TxnRequest) (*pb.TxnResponse, error) {
	b := evaluate(ctx, tv, rt)
	c := txnChecker{a: a, rv: tv}
	if err := c.checkBranch(ctx, b); err != nil {
		return nil, err
	}
	resp := &pb.TxnResponse{Header: &pb.ResponseHeader{}, Succeeded: b.succeeded}
	if err := execute(ctx, tv, b, resp); err != nil {
		// The checks above make this unreachable; if mvcc still fails, the
		// error is reported rather than crashing the member.
		a.lg.Error("txn failed after its checks passed", zap.Error(err))
		return nil, err
	}
	resp.Header.Revision = revisionAfter(tv)
	return resp, nil
}

// revisionAfter is the store revision once tv ends: one more than at its
// start if it wrote anything.
func revisionAfter(tv txnView) int64 {
	if len(tv.Changes()) > 0 {
		return tv.Rev() + 1
	}
	return tv.Rev()
}

// isReadOnly reports whether every op of both branches is a Range. A nested
// Txn counts as a write, as in etcd.
func isReadOnly(rt *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{rt.Success, rt.Failure} {
		for _, op := range ops {
			if op.GetRequestRange() == nil {
				return false
			}
		}
	}
	return true
}

// opRequest returns the request inside op, or nil for an empty op (no
// request, or a request field holding nil), which runs as a no-op.
func opRequest(op *pb.RequestOp) any {
	switch {
	case op.GetRequestRange() != nil:
		return op.GetRequestRange()
	case op.GetRequestPut() != nil:
		return op.GetRequestPut()
	case op.GetRequestDeleteRange() != nil:
		return op.GetRequestDeleteRange()
	case op.GetRequestTxn() != nil:
		return op.GetRequestTxn()
	}
	return nil
}

// evaluate judges rt's compares, and those of the nested Txns on the chosen
// side, against rv. It must run before the Txn writes anything.
func evaluate(ctx context.Context, rv mvcc.ReadView, rt *pb.TxnRequest) *branch {
	b := &branch{succeeded: comparesHold(ctx, rv, rt.Compare)}
	b.ops = rt.Success
	if !b.succeeded {
		b.ops = rt.Failure
	}
	b.nested = make([]*branch, len(b.ops))
	for i, op := range b.ops {
		if inner := op.GetRequestTxn(); inner != nil {
			b.nested[i] = evaluate(ctx, rv, inner)
		}
	}
	return b
}

func comparesHold(ctx context.Context, rv mvcc.ReadView, cmps []*pb.Compare) bool {
	for _, c := range cmps {
		if !compareHolds(ctx, rv, c) {
			return false
		}
	}
	return true
}

// compareHolds judges one compare: every key of its range must pass. A
// range without keys is judged as one key whose fields are all zero, except
// that a VALUE compare then fails whatever it asks, since the API cannot
// tell a missing value from an empty one.
func compareHolds(ctx context.Context, rv mvcc.ReadView, c *pb.Compare) bool {
	rr, err := rv.Range(ctx, c.GetKey(), rangeEnd(c.GetRangeEnd()), mvcc.RangeOptions{})
	if err != nil {
		return false
	}
	kvs := rr.KVs
	if len(kvs) == 0 {
		if c.GetTarget() == pb.Compare_VALUE {
			return false
		}
		kvs = []*mvccpb.KeyValue{{}}
	}
	passes, known := passingOrders[c.GetResult()]
	for _, kv := range kvs {
		if known && !passes[targetOrder(c, kv)+1] {
			return false
		}
	}
	return true
}

// passingOrders lists, per compare result, which orders of the key's field
// against the operand pass: index 0 for less, 1 for equal, 2 for greater. A
// result not listed passes everything (validation refuses none today).
var passingOrders = map[pb.Compare_CompareResult][3]bool{
	pb.Compare_EQUAL:     {false, true, false},
	pb.Compare_NOT_EQUAL: {true, false, true},
	pb.Compare_GREATER:   {false, false, true},
	pb.Compare_LESS:      {true, false, false},
}

// targetOrder orders kv's field that c targets against c's operand: -1, 0
// or +1.
func targetOrder(c *pb.Compare, kv *mvccpb.KeyValue) int {
	switch c.GetTarget() {
	case pb.Compare_VALUE:
		return bytes.Compare(kv.Value, c.GetValue())
	case pb.Compare_CREATE:
		return cmp.Compare(kv.CreateRevision, c.GetCreateRevision())
	case pb.Compare_MOD:
		return cmp.Compare(kv.ModRevision, c.GetModRevision())
	case pb.Compare_VERSION:
		return cmp.Compare(kv.Version, c.GetVersion())
	case pb.Compare_LEASE:
		return cmp.Compare(kv.Lease, c.GetLease())
	}
	return 0
}

// execute runs b's ops in order on tv, appending their responses to resp.
func execute(ctx context.Context, tv txnView, b *branch, resp *pb.TxnResponse) error {
	resp.Responses = make([]*pb.ResponseOp, 0, len(b.ops))
	for i, op := range b.ops {
		out, err := executeOp(ctx, tv, op, b.nested[i])
		if err != nil {
			return err
		}
		resp.Responses = append(resp.Responses, out)
	}
	return nil
}

// putOpAnswer is the memory of a put op's response: one allocation
// instead of four per op.
type putOpAnswer struct {
	op   pb.ResponseOp
	wrap pb.ResponseOp_ResponsePut
	put  putAnswer
}

// executeOp runs one op. Responses inside a Txn carry the revision their op
// saw or wrote; a nested Txn's own header stays empty, as in etcd.
func executeOp(ctx context.Context, tv txnView, op *pb.RequestOp, nested *branch) (*pb.ResponseOp, error) {
	switch req := opRequest(op).(type) {
	case *pb.RangeRequest:
		resp, err := executeRange(ctx, tv, req, revisionAfter(tv))
		if err != nil {
			return nil, fmt.Errorf("txn range: %w", err)
		}
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseRange{ResponseRange: resp}}, nil
	case *pb.PutRequest:
		prev, err := previousKV(ctx, tv, req)
		if err != nil {
			return nil, fmt.Errorf("txn put: %w", err)
		}
		m := &putOpAnswer{}
		m.put.resp.Header = &m.put.hdr
		m.wrap.ResponsePut = &m.put.resp
		m.op.Response = &m.wrap
		writePut(tv, req, prev, &m.put.resp)
		return &m.op, nil
	case *pb.DeleteRangeRequest:
		resp, err := executeDelete(ctx, tv, tv, req)
		if err != nil {
			return nil, fmt.Errorf("txn delete: %w", err)
		}
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: resp}}, nil
	case *pb.TxnRequest:
		inner := &pb.TxnResponse{Header: &pb.ResponseHeader{}, Succeeded: nested.succeeded}
		if err := execute(ctx, tv, nested, inner); err != nil {
			return nil, err
		}
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseTxn{ResponseTxn: inner}}, nil
	default:
		return &pb.ResponseOp{}, nil
	}
}
