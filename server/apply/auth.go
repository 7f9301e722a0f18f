package apply

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/server/auth"
	"github.com/cairnkv/cairn/server/lease"
)

// Auth in the apply step. The API layer put the sender's user name and the
// auth revision of its token in the request header; every member checks the
// request against that, at the same log position, so all decide alike (the
// auth store's checks read only state changed by applied entries). Auth
// management requests are applied by the auth store, which takes the
// backend's batch lock itself: none of them runs inside an mvcc transaction.

// indexKey carries the raft index of the entry being applied.
type indexKey struct{}

// WithIndex tells Apply the raft index of the entry it applies: a simple
// token issued by an Authenticate entry ends with it.
func WithIndex(ctx context.Context, index uint64) context.Context {
	return context.WithValue(ctx, indexKey{}, index)
}

func indexOf(ctx context.Context) uint64 {
	index, _ := ctx.Value(indexKey{}).(uint64)
	return index
}

// AuthInfoOf is the sender a request header names.
func AuthInfoOf(h *pb.RequestHeader) auth.AuthInfo {
	return auth.AuthInfo{Username: h.GetUsername(), Revision: h.GetAuthRevision()}
}

// checkPermission checks a KV or lease request against its sender's
// permissions; requests it does not know pass.
func (a *Applier) checkPermission(r *pb.InternalRaftRequest) error {
	if a.auth == nil || !a.auth.IsAuthEnabled() {
		return nil
	}
	ai := AuthInfoOf(r.Header)
	switch {
	case r.Range != nil:
		return a.auth.IsRangePermitted(ai, r.Range.Key, r.Range.RangeEnd)
	case r.Put != nil:
		return a.checkPut(ai, r.Put)
	case r.DeleteRange != nil:
		return a.checkDeleteRange(ai, r.DeleteRange)
	case r.Txn != nil:
		return a.CheckTxn(ai, r.Txn)
	case r.LeaseRevoke != nil:
		return a.checkLeaseWrites(ai, lease.LeaseID(r.LeaseRevoke.ID))
	}
	return nil
}

// checkPut: the key must be writable; every key already attached to the
// lease must be writable too (whoever attaches a key to a lease may revoke
// it, deleting the others); prev_kv needs the key readable.
func (a *Applier) checkPut(ai auth.AuthInfo, p *pb.PutRequest) error {
	if err := a.auth.IsPutPermitted(ai, p.Key); err != nil {
		return err
	}
	if err := a.checkLeaseWrites(ai, lease.LeaseID(p.Lease)); err != nil {
		return err
	}
	if p.PrevKv {
		return a.auth.IsRangePermitted(ai, p.Key, nil)
	}
	return nil
}

func (a *Applier) checkDeleteRange(ai auth.AuthInfo, dr *pb.DeleteRangeRequest) error {
	if err := a.auth.IsDeleteRangePermitted(ai, dr.Key, dr.RangeEnd); err != nil {
		return err
	}
	if dr.PrevKv {
		return a.auth.IsRangePermitted(ai, dr.Key, dr.RangeEnd)
	}
	return nil
}

// CheckTxn checks every compare (a read) and the ops of both branches,
// nested Txns included, whichever branch will run.
func (a *Applier) CheckTxn(ai auth.AuthInfo, rt *pb.TxnRequest) error {
	if a.auth == nil || !a.auth.IsAuthEnabled() {
		return nil
	}
	for _, c := range rt.Compare {
		if err := a.auth.IsRangePermitted(ai, c.Key, c.RangeEnd); err != nil {
			return err
		}
	}
	if err := a.checkOps(ai, rt.Success); err != nil {
		return err
	}
	return a.checkOps(ai, rt.Failure)
}

func (a *Applier) checkOps(ai auth.AuthInfo, ops []*pb.RequestOp) error {
	for _, op := range ops {
		var err error
		switch {
		case op.GetRequestRange() != nil:
			rr := op.GetRequestRange()
			err = a.auth.IsRangePermitted(ai, rr.Key, rr.RangeEnd)
		case op.GetRequestPut() != nil:
			err = a.checkPut(ai, op.GetRequestPut())
		case op.GetRequestDeleteRange() != nil:
			err = a.checkDeleteRange(ai, op.GetRequestDeleteRange())
		case op.GetRequestTxn() != nil:
			err = a.CheckTxn(ai, op.GetRequestTxn())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkLeaseWrites lets an admin through; anyone else must be allowed to
// write every key attached to the lease. An unknown lease passes (the
// request then fails on the lease itself).
func (a *Applier) checkLeaseWrites(ai auth.AuthInfo, id lease.LeaseID) error {
	if a.lessor == nil || id == 0 {
		return nil
	}
	l := a.lessor.Lookup(id)
	if l == nil || a.auth.IsAdminPermitted(ai) == nil {
		return nil
	}
	for _, key := range l.Keys() {
		if err := a.auth.IsPutPermitted(ai, []byte(key)); err != nil {
			return err
		}
	}
	return nil
}

// applyAuthRequest applies an auth request; ok is false for other requests.
func (a *Applier) applyAuthRequest(ctx context.Context, r *pb.InternalRaftRequest) (res *Result, ok bool) {
	if a.auth == nil || !isAuthRequest(r) {
		return nil, false
	}
	ai := AuthInfoOf(r.Header)
	switch {
	case r.Authenticate != nil:
		return result(a.auth.Authenticate(r.Authenticate, indexOf(ctx))), true
	case r.AuthStatus != nil:
		enabled, rev := a.auth.AuthStatus()
		return &Result{Resp: &pb.AuthStatusResponse{Enabled: enabled, AuthRevision: rev}}, true
	case r.AuthUserGet != nil:
		if err := a.auth.IsAdminPermitted(ai); err != nil && r.AuthUserGet.Name != ai.Username {
			return &Result{Err: err}, true
		}
		return result(a.auth.UserGet(r.AuthUserGet)), true
	case r.AuthRoleGet != nil:
		if err := a.auth.IsAdminPermitted(ai); err != nil && !a.auth.HasRole(ai.Username, r.AuthRoleGet.Role) {
			return &Result{Err: err}, true
		}
		return result(a.auth.RoleGet(r.AuthRoleGet)), true
	}
	if err := a.auth.IsAdminPermitted(ai); err != nil {
		return &Result{Err: err}, true
	}
	if res := a.applyAuthToggle(r); res != nil {
		return res, true
	}
	if res := a.applyUserRequest(r); res != nil {
		return res, true
	}
	return a.applyRoleRequest(r), true
}

func isAuthRequest(r *pb.InternalRaftRequest) bool {
	return r.Authenticate != nil || r.AuthStatus != nil || r.AuthEnable != nil || r.AuthDisable != nil ||
		r.AuthUserAdd != nil || r.AuthUserDelete != nil || r.AuthUserChangePassword != nil ||
		r.AuthUserGrantRole != nil || r.AuthUserRevokeRole != nil || r.AuthUserGet != nil || r.AuthUserList != nil ||
		r.AuthRoleAdd != nil || r.AuthRoleDelete != nil || r.AuthRoleGrantPermission != nil ||
		r.AuthRoleRevokePermission != nil || r.AuthRoleGet != nil || r.AuthRoleList != nil
}

func (a *Applier) applyAuthToggle(r *pb.InternalRaftRequest) *Result {
	switch {
	case r.AuthEnable != nil:
		if err := a.auth.AuthEnable(); err != nil {
			return &Result{Err: err}
		}
		return &Result{Resp: &pb.AuthEnableResponse{}}
	case r.AuthDisable != nil:
		a.auth.AuthDisable()
		return &Result{Resp: &pb.AuthDisableResponse{}}
	}
	return nil
}

func (a *Applier) applyUserRequest(r *pb.InternalRaftRequest) *Result {
	switch {
	case r.AuthUserAdd != nil:
		return result(a.auth.UserAdd(r.AuthUserAdd))
	case r.AuthUserDelete != nil:
		return result(a.auth.UserDelete(r.AuthUserDelete))
	case r.AuthUserChangePassword != nil:
		return result(a.auth.UserChangePassword(r.AuthUserChangePassword))
	case r.AuthUserGrantRole != nil:
		return result(a.auth.UserGrantRole(r.AuthUserGrantRole))
	case r.AuthUserRevokeRole != nil:
		return result(a.auth.UserRevokeRole(r.AuthUserRevokeRole))
	case r.AuthUserList != nil:
		return result(a.auth.UserList(r.AuthUserList))
	}
	return nil
}

func (a *Applier) applyRoleRequest(r *pb.InternalRaftRequest) *Result {
	switch {
	case r.AuthRoleAdd != nil:
		return result(a.auth.RoleAdd(r.AuthRoleAdd))
	case r.AuthRoleDelete != nil:
		return result(a.auth.RoleDelete(r.AuthRoleDelete))
	case r.AuthRoleGrantPermission != nil:
		return result(a.auth.RoleGrantPermission(r.AuthRoleGrantPermission))
	case r.AuthRoleRevokePermission != nil:
		return result(a.auth.RoleRevokePermission(r.AuthRoleRevokePermission))
	case r.AuthRoleList != nil:
		return result(a.auth.RoleList(r.AuthRoleList))
	}
	return &Result{Err: ErrUnsupportedRequest}
}
