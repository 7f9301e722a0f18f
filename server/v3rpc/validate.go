package v3rpc

import (
	"bytes"
	"slices"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// The checks below reject malformed requests before they cost a raft round.
// Each request kind has a list of flaws, each with etcd's error, in the
// order etcd tests them, so a client sees the same first error for a
// request that is wrong in several ways.

// flaw is one way a request can be malformed, and the error etcd gives it.
type flaw struct {
	present bool
	err     error
}

// firstFlaw returns the error of the first flaw present, or nil.
func firstFlaw(flaws ...flaw) error {
	for _, f := range flaws {
		if f.present {
			return f.err
		}
	}
	return nil
}

func rangeFlaws(r *pb.RangeRequest) error {
	_, orderKnown := pb.RangeRequest_SortOrder_name[int32(r.SortOrder)]
	_, targetKnown := pb.RangeRequest_SortTarget_name[int32(r.SortTarget)]
	return firstFlaw(
		flaw{len(r.Key) == 0, rpctypes.ErrGRPCEmptyKey},
		flaw{!orderKnown || !targetKnown, rpctypes.ErrGRPCInvalidSortOption},
	)
}

func putFlaws(r *pb.PutRequest) error {
	return firstFlaw(
		flaw{len(r.Key) == 0, rpctypes.ErrGRPCEmptyKey},
		flaw{r.IgnoreValue && len(r.Value) != 0, rpctypes.ErrGRPCValueProvided},
		flaw{r.IgnoreLease && r.Lease != 0, rpctypes.ErrGRPCLeaseProvided},
	)
}

func deleteFlaws(r *pb.DeleteRangeRequest) error {
	return firstFlaw(flaw{len(r.Key) == 0, rpctypes.ErrGRPCEmptyKey})
}

// txnFlaws checks the op budget, the compares' keys, then every op of both
// branches, recursively. One level spends as much of the budget as its
// longest list (compares count too); a nested txn may use only what its
// enclosing level leaves over.
func txnFlaws(r *pb.TxnRequest, budget int) error {
	spent := max(len(r.Compare), len(r.Success), len(r.Failure))
	if spent > budget {
		return rpctypes.ErrGRPCTooManyOps
	}
	if slices.ContainsFunc(r.Compare, func(c *pb.Compare) bool { return len(c.Key) == 0 }) {
		return rpctypes.ErrGRPCEmptyKey
	}
	for _, branch := range [2][]*pb.RequestOp{r.Success, r.Failure} {
		for _, op := range branch {
			if err := opFlaws(op, budget-spent); err != nil {
				return err
			}
		}
	}
	return nil
}

// opFlaws checks the request inside one txn op. An op without a request is
// refused as etcd does, with its "key not found" error.
func opFlaws(op *pb.RequestOp, budget int) error {
	switch req := op.GetRequest().(type) {
	case *pb.RequestOp_RequestRange:
		return rangeFlaws(req.RequestRange)
	case *pb.RequestOp_RequestPut:
		return putFlaws(req.RequestPut)
	case *pb.RequestOp_RequestDeleteRange:
		return deleteFlaws(req.RequestDeleteRange)
	case *pb.RequestOp_RequestTxn:
		return txnFlaws(req.RequestTxn, budget)
	default:
		return rpctypes.ErrGRPCKeyNotFound
	}
}

// checkTxnDuplicates rejects a txn in which one branch writes a key twice:
// two puts of one key, or a put of a key a delete of the same branch
// (at this level or in a nested txn) removes. It runs after txnFlaws,
// which bounds the number of ops, so the simple scans stay cheap.
func checkTxnDuplicates(r *pb.TxnRequest) error {
	for _, branch := range [][]*pb.RequestOp{r.Success, r.Failure} {
		if _, err := branchWrites(branch); err != nil {
			return err
		}
	}
	return nil
}

// writeSet is what one branch writes: the keys it puts and the ranges it
// deletes.
type writeSet struct {
	puts map[string]struct{}
	dels []keyRange
}

// keyRange is a delete range [begin, end); an empty end means the single key
// begin.
type keyRange struct{ begin, end []byte }

// contains reports whether key lies in the range. Like etcd, it reads end
// literally: a from-key delete (end "\x00") is an empty interval here and so
// never conflicts with a put.
func (kr keyRange) contains(key []byte) bool {
	if len(kr.end) == 0 {
		return bytes.Equal(kr.begin, key)
	}
	return bytes.Compare(kr.begin, key) <= 0 && bytes.Compare(key, kr.end) < 0
}

func (ws *writeSet) deletes(key []byte) bool {
	for _, kr := range ws.dels {
		if kr.contains(key) {
			return true
		}
	}
	return false
}

// branchWrites collects the writes of one list of ops and fails on a
// conflict. The two branches of a nested txn exclude each other, so they may
// put the same key; everything else may not overlap. The order of the steps
// (this level's deletes, then nested txns in order, then this level's puts)
// is etcd's, and decides which overlaps are seen.
func branchWrites(ops []*pb.RequestOp) (*writeSet, error) {
	ws := &writeSet{puts: map[string]struct{}{}}
	for _, op := range ops {
		if del := op.GetRequestDeleteRange(); del != nil {
			ws.dels = append(ws.dels, keyRange{begin: del.Key, end: del.RangeEnd})
		}
	}
	for _, op := range ops {
		if txn := op.GetRequestTxn(); txn != nil {
			if err := ws.addNestedTxn(txn); err != nil {
				return nil, err
			}
		}
	}
	for _, op := range ops {
		if put := op.GetRequestPut(); put != nil {
			if err := ws.addPut(put.Key); err != nil {
				return nil, err
			}
		}
	}
	return ws, nil
}

func (ws *writeSet) addPut(key []byte) error {
	if _, dup := ws.puts[string(key)]; dup || ws.deletes(key) {
		return rpctypes.ErrGRPCDuplicateKey
	}
	ws.puts[string(key)] = struct{}{}
	return nil
}

func (ws *writeSet) addNestedTxn(txn *pb.TxnRequest) error {
	then, err := branchWrites(txn.Success)
	if err != nil {
		return err
	}
	otherwise, err := branchWrites(txn.Failure)
	if err != nil {
		return err
	}
	for key := range then.puts {
		if err := ws.addPut([]byte(key)); err != nil {
			return err
		}
	}
	for key := range otherwise.puts {
		if _, inThen := then.puts[key]; inThen {
			if ws.deletes([]byte(key)) {
				return rpctypes.ErrGRPCDuplicateKey
			}
			continue
		}
		if err := ws.addPut([]byte(key)); err != nil {
			return err
		}
	}
	ws.dels = append(ws.dels, then.dels...)
	ws.dels = append(ws.dels, otherwise.dels...)
	return nil
}
