package etcdserver

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/auth"
)

// AuthAdmin serves etcd's Auth service for a member: it hashes passwords
// before they are proposed (so no plaintext password enters the log),
// checks passwords outside raft for Authenticate, and proposes everything
// else as it comes; the apply step does the rest. It keeps no state of its
// own.
type AuthAdmin struct {
	store  *auth.Store
	member authMember
	lg     *zap.Logger
}

// authMember is what AuthAdmin needs of the member.
type authMember interface {
	// proposeRequest proposes r and waits for its applied result.
	proposeRequest(ctx context.Context, r *pb.InternalRaftRequest) (proto.Message, error)
	// linearizableReadNotify waits until the member has applied everything
	// committed when it was called.
	linearizableReadNotify(ctx context.Context) error
	// checkPassword checks a password against the applied auth state
	// while the member's stores are held, and returns that state's
	// revision.
	checkPassword(name, password string) (uint64, error)
}

func newAuthAdmin(store *auth.Store, m authMember, lg *zap.Logger) *AuthAdmin {
	return &AuthAdmin{store: store, member: m, lg: lg}
}

// AuthAdmin is the member's Auth service.
func (s *Server) AuthAdmin() *AuthAdmin { return s.authAdmin }

// Authenticate checks the password here, outside raft, and proposes the
// token's issue; if the auth state changed between the check and the issue
// the password may be stale, so it checks again.
func (a *AuthAdmin) Authenticate(ctx context.Context, r *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error) {
	if err := a.member.linearizableReadNotify(ctx); err != nil {
		return nil, err
	}
	for {
		checked, err := a.member.checkPassword(r.Name, r.Password)
		if err != nil {
			if err != auth.ErrAuthNotEnabled {
				a.lg.Warn("invalid authentication was requested", zap.String("user", r.Name), zap.Error(err))
			}
			return nil, err
		}
		prefix, err := a.store.GenTokenPrefix()
		if err != nil {
			return nil, err
		}
		req := &pb.InternalAuthenticateRequest{Name: r.Name, SimpleToken: prefix}
		resp, err := a.member.proposeRequest(ctx, &pb.InternalRaftRequest{Authenticate: req})
		if err != nil {
			return nil, err
		}
		if checked == a.store.Revision() {
			return resp.(*pb.AuthenticateResponse), nil
		}
		a.lg.Info("auth revision changed while the password was checked; checking again")
	}
}

// AuthEnable turns auth on (root user with the root role required).
func (a *AuthAdmin) AuthEnable(ctx context.Context, r *pb.AuthEnableRequest) (*pb.AuthEnableResponse, error) {
	return proposeAs[*pb.AuthEnableResponse](ctx, a.member, &pb.InternalRaftRequest{AuthEnable: r})
}

// AuthDisable turns auth off.
func (a *AuthAdmin) AuthDisable(ctx context.Context, r *pb.AuthDisableRequest) (*pb.AuthDisableResponse, error) {
	return proposeAs[*pb.AuthDisableResponse](ctx, a.member, &pb.InternalRaftRequest{AuthDisable: r})
}

// AuthStatus reports whether auth is on and the auth revision. It goes
// through raft (so it is linearizable) and needs no token at all, so a
// client whose token expired learns the revision by asking without one.
// Like etcd v3.7.3 it refuses a request that carries an invalid or expired
// token with ErrInvalidAuthToken (docs/auth.md).
func (a *AuthAdmin) AuthStatus(ctx context.Context, r *pb.AuthStatusRequest) (*pb.AuthStatusResponse, error) {
	return proposeAs[*pb.AuthStatusResponse](ctx, a.member, &pb.InternalRaftRequest{AuthStatus: r})
}

// UserAdd adds a user; the password is hashed before it is proposed.
func (a *AuthAdmin) UserAdd(ctx context.Context, r *pb.AuthUserAddRequest) (*pb.AuthUserAddResponse, error) {
	if err := auth.HashUserAdd(r, a.store.BcryptCost()); err != nil {
		return nil, err
	}
	return proposeAs[*pb.AuthUserAddResponse](ctx, a.member, &pb.InternalRaftRequest{AuthUserAdd: r})
}

// UserDelete deletes a user.
func (a *AuthAdmin) UserDelete(ctx context.Context, r *pb.AuthUserDeleteRequest) (*pb.AuthUserDeleteResponse, error) {
	return proposeAs[*pb.AuthUserDeleteResponse](ctx, a.member, &pb.InternalRaftRequest{AuthUserDelete: r})
}

// UserChangePassword changes a password; it is hashed before it is proposed.
func (a *AuthAdmin) UserChangePassword(ctx context.Context, r *pb.AuthUserChangePasswordRequest) (*pb.AuthUserChangePasswordResponse, error) {
	if err := auth.HashChangePassword(r, a.store.BcryptCost()); err != nil {
		return nil, err
	}
	return proposeAs[*pb.AuthUserChangePasswordResponse](ctx, a.member, &pb.InternalRaftRequest{AuthUserChangePassword: r})
}

// UserGrantRole grants a role to a user.
func (a *AuthAdmin) UserGrantRole(ctx context.Context, r *pb.AuthUserGrantRoleRequest) (*pb.AuthUserGrantRoleResponse, error) {
	return proposeAs[*pb.AuthUserGrantRoleResponse](ctx, a.member, &pb.InternalRaftRequest{AuthUserGrantRole: r})
}

// UserRevokeRole revokes a role from a user.
func (a *AuthAdmin) UserRevokeRole(ctx context.Context, r *pb.AuthUserRevokeRoleRequest) (*pb.AuthUserRevokeRoleResponse, error) {
	return proposeAs[*pb.AuthUserRevokeRoleResponse](ctx, a.member, &pb.InternalRaftRequest{AuthUserRevokeRole: r})
}

// UserGet returns a user's roles (admin or the user itself).
func (a *AuthAdmin) UserGet(ctx context.Context, r *pb.AuthUserGetRequest) (*pb.AuthUserGetResponse, error) {
	return proposeAs[*pb.AuthUserGetResponse](ctx, a.member, &pb.InternalRaftRequest{AuthUserGet: r})
}

// UserList lists the users.
func (a *AuthAdmin) UserList(ctx context.Context, r *pb.AuthUserListRequest) (*pb.AuthUserListResponse, error) {
	return proposeAs[*pb.AuthUserListResponse](ctx, a.member, &pb.InternalRaftRequest{AuthUserList: r})
}

// RoleAdd adds a role.
func (a *AuthAdmin) RoleAdd(ctx context.Context, r *pb.AuthRoleAddRequest) (*pb.AuthRoleAddResponse, error) {
	return proposeAs[*pb.AuthRoleAddResponse](ctx, a.member, &pb.InternalRaftRequest{AuthRoleAdd: r})
}

// RoleDelete deletes a role.
func (a *AuthAdmin) RoleDelete(ctx context.Context, r *pb.AuthRoleDeleteRequest) (*pb.AuthRoleDeleteResponse, error) {
	return proposeAs[*pb.AuthRoleDeleteResponse](ctx, a.member, &pb.InternalRaftRequest{AuthRoleDelete: r})
}

// RoleGrantPermission grants a key permission to a role.
func (a *AuthAdmin) RoleGrantPermission(ctx context.Context, r *pb.AuthRoleGrantPermissionRequest) (*pb.AuthRoleGrantPermissionResponse, error) {
	return proposeAs[*pb.AuthRoleGrantPermissionResponse](ctx, a.member, &pb.InternalRaftRequest{AuthRoleGrantPermission: r})
}

// RoleRevokePermission revokes a key permission from a role.
func (a *AuthAdmin) RoleRevokePermission(ctx context.Context, r *pb.AuthRoleRevokePermissionRequest) (*pb.AuthRoleRevokePermissionResponse, error) {
	return proposeAs[*pb.AuthRoleRevokePermissionResponse](ctx, a.member, &pb.InternalRaftRequest{AuthRoleRevokePermission: r})
}

// RoleGet returns a role's permissions (admin or a holder of the role).
func (a *AuthAdmin) RoleGet(ctx context.Context, r *pb.AuthRoleGetRequest) (*pb.AuthRoleGetResponse, error) {
	return proposeAs[*pb.AuthRoleGetResponse](ctx, a.member, &pb.InternalRaftRequest{AuthRoleGet: r})
}

// RoleList lists the roles.
func (a *AuthAdmin) RoleList(ctx context.Context, r *pb.AuthRoleListRequest) (*pb.AuthRoleListResponse, error) {
	return proposeAs[*pb.AuthRoleListResponse](ctx, a.member, &pb.InternalRaftRequest{AuthRoleList: r})
}
