package client

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

type opType int

const (
	tRange opType = iota + 1
	tPut
	tDeleteRange
	tTxn
)

// LeaseID is a lease's ID; NoLease is none.
type LeaseID int64

// NoLease attaches no lease.
const NoLease LeaseID = 0

// Sort targets and orders for WithSort.
type (
	SortTarget = pb.RangeRequest_SortTarget
	SortOrder  = pb.RangeRequest_SortOrder
)

// Sort targets and orders.
const (
	SortByKey            = pb.RangeRequest_KEY
	SortByVersion        = pb.RangeRequest_VERSION
	SortByCreateRevision = pb.RangeRequest_CREATE
	SortByModRevision    = pb.RangeRequest_MOD
	SortByValue          = pb.RangeRequest_VALUE
	SortNone             = pb.RangeRequest_NONE
	SortAscend           = pb.RangeRequest_ASCEND
	SortDescend          = pb.RangeRequest_DESCEND
)

// Op is one Get, Put, Delete or Txn; build it with OpGet, OpPut, OpDelete
// or OpTxn and run it with KV.Do or inside a Txn. Watch takes the same
// options.
type Op struct {
	t        opType
	key, end []byte

	// Range.
	limit, rev              int64
	sortTarget              SortTarget
	sortOrder               SortOrder
	serializable            bool
	keysOnly, countOnly     bool
	minModRev, maxModRev    int64
	minCreateRev, maxCreate int64

	// Put and Delete.
	val                      []byte
	leaseID                  LeaseID
	prevKV                   bool
	ignoreValue, ignoreLease bool

	// Watch.
	progressNotify, createdNotify bool
	filterPut, filterDelete       bool
	fragment                      bool

	// Txn.
	cmps             []Cmp
	thenOps, elseOps []Op
}

// OpOption changes an Op.
type OpOption func(*Op)

func newOp(t opType, key string, opts []OpOption) Op {
	op := Op{t: t, key: []byte(key)}
	for _, o := range opts {
		o(&op)
	}
	return op
}

// OpGet reads key (or a range, with WithPrefix, WithRange or WithFromKey).
func OpGet(key string, opts ...OpOption) Op { return newOp(tRange, key, opts) }

// OpPut writes val under key.
func OpPut(key, val string, opts ...OpOption) Op {
	op := newOp(tPut, key, opts)
	op.val = []byte(val)
	return op
}

// OpDelete deletes key (or a range).
func OpDelete(key string, opts ...OpOption) Op { return newOp(tDeleteRange, key, opts) }

// OpTxn is a nested transaction.
func OpTxn(cmps []Cmp, thenOps, elseOps []Op) Op {
	return Op{t: tTxn, cmps: cmps, thenOps: thenOps, elseOps: elseOps}
}

// IsGet, IsPut, IsDelete and IsTxn tell the Op's kind.
func (op Op) IsGet() bool    { return op.t == tRange }
func (op Op) IsPut() bool    { return op.t == tPut }
func (op Op) IsDelete() bool { return op.t == tDeleteRange }
func (op Op) IsTxn() bool    { return op.t == tTxn }

// KeyBytes and RangeBytes are the Op's key and range end.
func (op Op) KeyBytes() []byte   { return op.key }
func (op Op) RangeBytes() []byte { return op.end }

// readOnly reports whether the Op (and every nested Op) only reads.
func (op Op) readOnly() bool {
	switch op.t {
	case tRange:
		return true
	case tTxn:
		return allReadOnly(op.thenOps) && allReadOnly(op.elseOps)
	default:
		return false
	}
}

func allReadOnly(ops []Op) bool {
	for _, op := range ops {
		if !op.readOnly() {
			return false
		}
	}
	return true
}

func (op Op) rangeRequest() *pb.RangeRequest {
	return &pb.RangeRequest{
		Key: op.key, RangeEnd: op.end, Limit: op.limit, Revision: op.rev,
		SortOrder: op.sortOrder, SortTarget: op.sortTarget,
		Serializable: op.serializable, KeysOnly: op.keysOnly, CountOnly: op.countOnly,
		MinModRevision: op.minModRev, MaxModRevision: op.maxModRev,
		MinCreateRevision: op.minCreateRev, MaxCreateRevision: op.maxCreate,
	}
}

func (op Op) putRequest() *pb.PutRequest {
	return &pb.PutRequest{
		Key: op.key, Value: op.val, Lease: int64(op.leaseID), PrevKv: op.prevKV,
		IgnoreValue: op.ignoreValue, IgnoreLease: op.ignoreLease,
	}
}

func (op Op) deleteRequest() *pb.DeleteRangeRequest {
	return &pb.DeleteRangeRequest{Key: op.key, RangeEnd: op.end, PrevKv: op.prevKV}
}

func (op Op) txnRequest() *pb.TxnRequest {
	req := &pb.TxnRequest{Success: requestOps(op.thenOps), Failure: requestOps(op.elseOps)}
	for _, c := range op.cmps {
		req.Compare = append(req.Compare, c.proto())
	}
	return req
}

func requestOps(ops []Op) []*pb.RequestOp {
	out := make([]*pb.RequestOp, len(ops))
	for i, op := range ops {
		out[i] = op.requestOp()
	}
	return out
}

func (op Op) requestOp() *pb.RequestOp {
	switch op.t {
	case tRange:
		return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: op.rangeRequest()}}
	case tPut:
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: op.putRequest()}}
	case tDeleteRange:
		return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: op.deleteRequest()}}
	case tTxn:
		return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: op.txnRequest()}}
	}
	panic("client: Op without a kind (build it with OpGet, OpPut, OpDelete or OpTxn)")
}

func (op Op) watchRequest(startRev int64) *pb.WatchRequest {
	req := &pb.WatchCreateRequest{
		Key: op.key, RangeEnd: op.end, StartRevision: startRev,
		ProgressNotify: op.progressNotify, PrevKv: op.prevKV, Fragment: op.fragment,
	}
	if op.filterPut {
		req.Filters = append(req.Filters, pb.WatchCreateRequest_NOPUT)
	}
	if op.filterDelete {
		req.Filters = append(req.Filters, pb.WatchCreateRequest_NODELETE)
	}
	return &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: req}}
}
