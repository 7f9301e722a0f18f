package v3rpc

import (
	"bytes"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// The checks below reject malformed requests before they cost a raft round,
// with the same errors and in the same order as etcd, so a client sees the
// same first error for a request that is wrong in several ways.

func checkRangeRequest(r *pb.RangeRequest) error {
	if len(r.Key) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	if _, known := pb.RangeRequest_SortOrder_name[int32(r.SortOrder)]; !known {
		return rpctypes.ErrGRPCInvalidSortOption
	}
	if _, known := pb.RangeRequest_SortTarget_name[int32(r.SortTarget)]; !known {
		return rpctypes.ErrGRPCInvalidSortOption
	}
	return nil
}

func checkPutRequest(r *pb.PutRequest) error {
	if len(r.Key) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	if r.IgnoreValue && len(r.Value) != 0 {
		return rpctypes.ErrGRPCValueProvided
	}
	if r.IgnoreLease && r.Lease != 0 {
		return rpctypes.ErrGRPCLeaseProvided
	}
	return nil
}

func checkDeleteRequest(r *pb.DeleteRangeRequest) error {
	if len(r.Key) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	return nil
}

// checkTxnRequest checks the op budget and every op, recursively. The budget
// of one level is the longest of its three lists (compares count too); a
// nested txn may use only what its enclosing level leaves over.
func checkTxnRequest(r *pb.TxnRequest, maxTxnOps int) error {
	used := max(len(r.Compare), len(r.Success), len(r.Failure))
	if used > maxTxnOps {
		return rpctypes.ErrGRPCTooManyOps
	}
	for _, c := range r.Compare {
		if len(c.Key) == 0 {
			return rpctypes.ErrGRPCEmptyKey
		}
	}
	for _, branch := range [][]*pb.RequestOp{r.Success, r.Failure} {
		for _, op := range branch {
			if err := checkRequestOp(op, maxTxnOps-used); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkRequestOp(op *pb.RequestOp, maxTxnOps int) error {
	switch req := op.GetRequest().(type) {
	case *pb.RequestOp_RequestRange:
		return checkRangeRequest(req.RequestRange)
	case *pb.RequestOp_RequestPut:
		return checkPutRequest(req.RequestPut)
	case *pb.RequestOp_RequestDeleteRange:
		return checkDeleteRequest(req.RequestDeleteRange)
	case *pb.RequestOp_RequestTxn:
		return checkTxnRequest(req.RequestTxn, maxTxnOps)
	default:
		// An op with no request set: etcd calls this a missing key.
		return rpctypes.ErrGRPCKeyNotFound
	}
}

// checkTxnDuplicates rejects a txn in which one branch writes a key twice:
// two puts of one key, or a put of a key a delete of the same branch
// (at this level or in a nested txn) removes. It runs after checkTxnRequest,
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
