package apply

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/lease"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// Leases: LeaseGrant, LeaseRevoke and LeaseCheckpoint change the lessor
// (server/lease), and every write keeps the lessor's key -> lease index in
// step with the keys the write put or deleted. All of it is deterministic:
// the lessor's clock only decides expiry on the leader, which then proposes
// a revoke like any other request.

func (a *Applier) applyLeaseGrant(r *pb.LeaseGrantRequest) *Result {
	if err := a.corruptErr(); err != nil {
		return &Result{Err: err}
	}
	if a.alarms.active(pb.AlarmType_NOSPACE) {
		return &Result{Err: errs.ErrNoSpace}
	}
	if a.lessor == nil {
		return &Result{Err: errs.ErrLeaseNotFound}
	}
	fits := a.QuotaAvailable(r)
	l, err := a.lessor.Grant(lease.LeaseID(r.ID), r.TTL)
	if err != nil {
		return &Result{Err: err}
	}
	resp := &pb.LeaseGrantResponse{Header: &pb.ResponseHeader{Revision: a.kv.Rev()}, ID: int64(l.ID()), TTL: l.TTL()}
	return overQuota(&Result{Resp: resp}, fits)
}

func (a *Applier) applyLeaseRevoke(r *pb.LeaseRevokeRequest) *Result {
	if err := a.corruptErr(); err != nil {
		return &Result{Err: err}
	}
	if a.lessor == nil {
		return &Result{Err: errs.ErrLeaseNotFound}
	}
	if err := a.lessor.Revoke(lease.LeaseID(r.ID)); err != nil {
		return &Result{Err: err}
	}
	return &Result{Resp: &pb.LeaseRevokeResponse{Header: &pb.ResponseHeader{Revision: a.kv.Rev()}}}
}

func (a *Applier) applyLeaseCheckpoint(r *pb.LeaseCheckpointRequest) *Result {
	if a.lessor != nil {
		for _, cp := range r.GetCheckpoints() {
			if err := a.lessor.Checkpoint(lease.LeaseID(cp.GetID()), cp.GetRemaining_TTL()); err != nil {
				return &Result{Err: err}
			}
		}
	}
	return &Result{Resp: &pb.LeaseCheckpointResponse{Header: &pb.ResponseHeader{Revision: a.kv.Rev()}}}
}

// endWrite ends a write transaction and moves the keys it changed between
// leases: a put attaches its key to the put's lease (detaching it from the
// previous one), a delete detaches it.
func (a *Applier) endWrite(tw mvcc.TxnWrite) {
	changes := tw.Changes()
	tw.End()
	if a.lessor == nil {
		return
	}
	for _, kv := range changes {
		a.trackLease(kv)
	}
}

func (a *Applier) trackLease(kv *mvccpb.KeyValue) {
	key := string(kv.GetKey())
	if kv.GetCreateRevision() == 0 { // a delete's tombstone
		a.lessor.KeyDeleted(key)
		return
	}
	if err := a.lessor.KeyPut(key, lease.LeaseID(kv.GetLease())); err != nil {
		a.lg.Warn("cannot attach key to its lease")
	}
}
