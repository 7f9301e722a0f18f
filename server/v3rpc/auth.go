package v3rpc

import (
	"context"
	"errors"
	"maps"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/server/auth"
)

// The Auth service, and the auth checks that belong to the gRPC layer. The
// member resolves each request's token itself (from the incoming metadata,
// auth.TokenFromMetadata); the gate interceptors below only ask it whether
// the sender may call admin-only methods at all.

func init() { maps.Copy(grpcErrorOf, auth.GRPCErrors) }

// AuthServer is what the Auth service needs from a member
// (etcdserver.AuthAdmin); Config.Auth names it, and without it the service
// is not registered.
type AuthServer interface {
	AuthEnable(ctx context.Context, r *pb.AuthEnableRequest) (*pb.AuthEnableResponse, error)
	AuthDisable(ctx context.Context, r *pb.AuthDisableRequest) (*pb.AuthDisableResponse, error)
	AuthStatus(ctx context.Context, r *pb.AuthStatusRequest) (*pb.AuthStatusResponse, error)
	Authenticate(ctx context.Context, r *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error)
	UserAdd(ctx context.Context, r *pb.AuthUserAddRequest) (*pb.AuthUserAddResponse, error)
	UserGet(ctx context.Context, r *pb.AuthUserGetRequest) (*pb.AuthUserGetResponse, error)
	UserList(ctx context.Context, r *pb.AuthUserListRequest) (*pb.AuthUserListResponse, error)
	UserDelete(ctx context.Context, r *pb.AuthUserDeleteRequest) (*pb.AuthUserDeleteResponse, error)
	UserChangePassword(ctx context.Context, r *pb.AuthUserChangePasswordRequest) (*pb.AuthUserChangePasswordResponse, error)
	UserGrantRole(ctx context.Context, r *pb.AuthUserGrantRoleRequest) (*pb.AuthUserGrantRoleResponse, error)
	UserRevokeRole(ctx context.Context, r *pb.AuthUserRevokeRoleRequest) (*pb.AuthUserRevokeRoleResponse, error)
	RoleAdd(ctx context.Context, r *pb.AuthRoleAddRequest) (*pb.AuthRoleAddResponse, error)
	RoleGet(ctx context.Context, r *pb.AuthRoleGetRequest) (*pb.AuthRoleGetResponse, error)
	RoleList(ctx context.Context, r *pb.AuthRoleListRequest) (*pb.AuthRoleListResponse, error)
	RoleDelete(ctx context.Context, r *pb.AuthRoleDeleteRequest) (*pb.AuthRoleDeleteResponse, error)
	RoleGrantPermission(ctx context.Context, r *pb.AuthRoleGrantPermissionRequest) (*pb.AuthRoleGrantPermissionResponse, error)
	RoleRevokePermission(ctx context.Context, r *pb.AuthRoleRevokePermissionRequest) (*pb.AuthRoleRevokePermissionResponse, error)
}

// AuthGate is implemented by a member with auth: it tells whether the
// sender of ctx is an admin (root role), and whether ctx names a user at
// all while auth is on.
type AuthGate interface {
	AdminPermitted(ctx context.Context) error
	RequireAuthInfo(ctx context.Context) error
}

// WatchPermitter is implemented by a WatchServer with auth: may the sender
// of ctx watch [key, end)?
type WatchPermitter interface {
	IsWatchPermitted(ctx context.Context, key, end []byte) error
}

type authServer struct {
	pb.UnimplementedAuthServer
	s  Server
	as AuthServer
}

func (a *authServer) AuthEnable(ctx context.Context, r *pb.AuthEnableRequest) (*pb.AuthEnableResponse, error) {
	return withHeader(a.s, a.as.AuthEnable, ctx, r)
}

func (a *authServer) AuthDisable(ctx context.Context, r *pb.AuthDisableRequest) (*pb.AuthDisableResponse, error) {
	return withHeader(a.s, a.as.AuthDisable, ctx, r)
}

func (a *authServer) AuthStatus(ctx context.Context, r *pb.AuthStatusRequest) (*pb.AuthStatusResponse, error) {
	return withHeader(a.s, a.as.AuthStatus, ctx, r)
}

func (a *authServer) Authenticate(ctx context.Context, r *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error) {
	return withHeader(a.s, a.as.Authenticate, ctx, r)
}

func (a *authServer) UserAdd(ctx context.Context, r *pb.AuthUserAddRequest) (*pb.AuthUserAddResponse, error) {
	return withHeader(a.s, a.as.UserAdd, ctx, r)
}

func (a *authServer) UserGet(ctx context.Context, r *pb.AuthUserGetRequest) (*pb.AuthUserGetResponse, error) {
	return withHeader(a.s, a.as.UserGet, ctx, r)
}

func (a *authServer) UserList(ctx context.Context, r *pb.AuthUserListRequest) (*pb.AuthUserListResponse, error) {
	return withHeader(a.s, a.as.UserList, ctx, r)
}

func (a *authServer) UserDelete(ctx context.Context, r *pb.AuthUserDeleteRequest) (*pb.AuthUserDeleteResponse, error) {
	return withHeader(a.s, a.as.UserDelete, ctx, r)
}

func (a *authServer) UserChangePassword(ctx context.Context, r *pb.AuthUserChangePasswordRequest) (*pb.AuthUserChangePasswordResponse, error) {
	return withHeader(a.s, a.as.UserChangePassword, ctx, r)
}

func (a *authServer) UserGrantRole(ctx context.Context, r *pb.AuthUserGrantRoleRequest) (*pb.AuthUserGrantRoleResponse, error) {
	return withHeader(a.s, a.as.UserGrantRole, ctx, r)
}

func (a *authServer) UserRevokeRole(ctx context.Context, r *pb.AuthUserRevokeRoleRequest) (*pb.AuthUserRevokeRoleResponse, error) {
	return withHeader(a.s, a.as.UserRevokeRole, ctx, r)
}

func (a *authServer) RoleAdd(ctx context.Context, r *pb.AuthRoleAddRequest) (*pb.AuthRoleAddResponse, error) {
	return withHeader(a.s, a.as.RoleAdd, ctx, r)
}

func (a *authServer) RoleGet(ctx context.Context, r *pb.AuthRoleGetRequest) (*pb.AuthRoleGetResponse, error) {
	return withHeader(a.s, a.as.RoleGet, ctx, r)
}

func (a *authServer) RoleList(ctx context.Context, r *pb.AuthRoleListRequest) (*pb.AuthRoleListResponse, error) {
	return withHeader(a.s, a.as.RoleList, ctx, r)
}

func (a *authServer) RoleDelete(ctx context.Context, r *pb.AuthRoleDeleteRequest) (*pb.AuthRoleDeleteResponse, error) {
	return withHeader(a.s, a.as.RoleDelete, ctx, r)
}

func (a *authServer) RoleGrantPermission(ctx context.Context, r *pb.AuthRoleGrantPermissionRequest) (*pb.AuthRoleGrantPermissionResponse, error) {
	return withHeader(a.s, a.as.RoleGrantPermission, ctx, r)
}

func (a *authServer) RoleRevokePermission(ctx context.Context, r *pb.AuthRoleRevokePermissionRequest) (*pb.AuthRoleRevokePermissionResponse, error) {
	return withHeader(a.s, a.as.RoleRevokePermission, ctx, r)
}

// gateOf says what a unary request needs before the member sees it: an
// admin (adminOnly), any user while auth is on (userOnly), or nothing.
type gate int

const (
	gateNone gate = iota
	gateUser
	gateAdmin
)

func gateOf(req any) gate {
	switch r := req.(type) {
	case *pb.CompactionRequest, *pb.DefragmentRequest, *pb.HashRequest, *pb.HashKVRequest,
		*pb.MoveLeaderRequest, *pb.DowngradeRequest,
		*pb.MemberAddRequest, *pb.MemberRemoveRequest, *pb.MemberUpdateRequest, *pb.MemberPromoteRequest:
		return gateAdmin
	case *pb.AlarmRequest:
		if r.GetAction() == pb.AlarmRequest_GET {
			return gateUser
		}
		return gateAdmin
	case *pb.StatusRequest, *pb.MemberListRequest:
		return gateUser
	}
	return gateNone
}

func (g gate) check(ctx context.Context, ag AuthGate) error {
	switch g {
	case gateAdmin:
		return ag.AdminPermitted(ctx)
	case gateUser:
		return ag.RequireAuthInfo(ctx)
	}
	return nil
}

func authUnaryCheck(ag AuthGate) unaryCheck {
	return func(ctx context.Context, req any) error { return gateOf(req).check(ctx, ag) }
}

// snapshotMethod is the one streaming method only admins may call.
const snapshotMethod = "/etcdserverpb.Maintenance/Snapshot"

func authStreamInterceptor(ag AuthGate) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if info.FullMethod == snapshotMethod {
			if err := ag.AdminPermitted(ss.Context()); err != nil {
				return err
			}
		}
		return handler(srv, ss)
	}
}

// permittedWatch checks a watch creation; the refusal's cancel reason is
// the gRPC error text (a denied watch reads "rpc error: code =
// PermissionDenied desc = etcdserver: permission denied", as with etcd).
// Errors other than an invalid token, an old revision or no user become
// permission denied.
func permittedWatch(ctx context.Context, wp WatchPermitter, cr *pb.WatchCreateRequest) error {
	key := cr.GetKey()
	if len(key) == 0 {
		key = []byte{0}
	}
	err := wp.IsWatchPermitted(ctx, key, cr.GetRangeEnd())
	switch {
	case err == nil:
		return nil
	case errors.Is(err, auth.ErrInvalidAuthToken), errors.Is(err, auth.ErrAuthOldRevision), errors.Is(err, auth.ErrUserEmpty):
		return err
	}
	return auth.ErrPermissionDenied
}
