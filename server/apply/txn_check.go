package apply

import (
	"bytes"
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// txnChecker validates the ops of an evaluated Txn before any of them runs,
// so a Txn either applies whole or fails with nothing written. The checks
// are etcd's: against the state before the Txn, ops in execution order, the
// first failure wins.
type txnChecker struct {
	a  *Applier
	rv mvcc.ReadView // the state before the Txn
	// writes are the Put and DeleteRange ops met so far, in execution order.
	writes []plannedWrite
}

// plannedWrite is the key range one earlier op of the Txn writes.
type plannedWrite struct {
	key, end []byte // end as mvcc takes it (nil: just key; "\x00": every key >= key)
	deletes  bool
}

func (c *txnChecker) checkBranch(ctx context.Context, b *branch) error {
	for i, op := range b.ops {
		var err error
		switch req := opRequest(op).(type) {
		case *pb.RangeRequest:
			err = checkReadRevision(ctx, c.rv, req)
		case *pb.PutRequest:
			err = c.checkPut(ctx, req)
			c.writes = append(c.writes, plannedWrite{key: req.Key})
		case *pb.DeleteRangeRequest:
			c.writes = append(c.writes, plannedWrite{key: req.Key, end: rangeEnd(req.RangeEnd), deletes: true})
		case *pb.TxnRequest:
			err = c.checkBranch(ctx, b.nested[i])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkPut: the lease must exist, and for ignore_value/ignore_lease the key
// must exist before the Txn. etcd checks only that; a key an earlier op of
// the same Txn deletes would then be missing when the Put runs (etcd panics
// there), so that case fails here too, with errs.ErrKeyNotFound.
func (c *txnChecker) checkPut(ctx context.Context, p *pb.PutRequest) error {
	if err := c.a.checkLease(p.Lease); err != nil {
		return err
	}
	if _, err := previousKV(ctx, c.rv, p); err != nil {
		return err
	}
	if (p.IgnoreValue || p.IgnoreLease) && c.deletedEarlier(p.Key) {
		return errs.ErrKeyNotFound
	}
	return nil
}

// deletedEarlier reports whether key, present before the Txn, is absent
// after the writes planned so far: the last write covering it decides.
func (c *txnChecker) deletedEarlier(key []byte) bool {
	for i := len(c.writes) - 1; i >= 0; i-- {
		if w := c.writes[i]; w.covers(key) {
			return w.deletes
		}
	}
	return false
}

func (w plannedWrite) covers(key []byte) bool {
	switch {
	case w.end == nil:
		return bytes.Equal(key, w.key)
	case len(w.end) == 1 && w.end[0] == 0:
		return bytes.Compare(key, w.key) >= 0
	default:
		return bytes.Compare(key, w.key) >= 0 && bytes.Compare(key, w.end) < 0
	}
}

// checkReadRevision fails a Range inside a Txn whose revision cannot be
// read: above the current revision (errs.ErrFutureRev) or compacted
// (errs.ErrCompacted), judged as etcd does before the Txn writes. It then
// asks mvcc too, so that execution cannot fail where the check passed.
func checkReadRevision(ctx context.Context, rv mvcc.ReadView, r *pb.RangeRequest) error {
	switch {
	case r.Revision == 0:
		return nil
	case r.Revision > rv.Rev():
		return errs.ErrFutureRev
	case r.Revision < etcdFirstRev(rv):
		return errs.ErrCompacted
	}
	_, err := rv.Range(ctx, r.Key, rangeEnd(r.RangeEnd), mvcc.RangeOptions{Rev: r.Revision, Count: true})
	return err
}

// etcdFirstRev is the bound etcd checks Txn reads against: its compacted
// revision, which is -1 until the first compaction (mvcc's FirstRev says 0
// then). So before any compaction a Txn may read at revision -1, which
// means the current revision, while -2 and below are "compacted".
func etcdFirstRev(rv mvcc.ReadView) int64 {
	if first := rv.FirstRev(); first != 0 {
		return first
	}
	return -1
}
