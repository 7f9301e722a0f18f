package client

import (
	"context"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// Auth types of the wire format.
type (
	// Permission is one key or key range a role may read and/or write.
	Permission = authpb.Permission
	// UserAddOptions are the options of UserAddWithOptions.
	UserAddOptions = authpb.UserAddOptions
)

// PermissionType is what a permission allows: read, write or both.
type PermissionType = authpb.Permission_Type

// Permission types.
const (
	PermRead      = authpb.Permission_READ
	PermWrite     = authpb.Permission_WRITE
	PermReadWrite = authpb.Permission_READWRITE
)

// StrToPermissionType parses "read", "write" or "readwrite" (any case).
func StrToPermissionType(s string) (PermissionType, error) {
	if v, ok := authpb.Permission_Type_value[strings.ToUpper(s)]; ok {
		return PermissionType(v), nil
	}
	return PermissionType(-1), fmt.Errorf("invalid permission type: %s", s)
}

// Auth manages authentication: users, roles, their permissions, and
// whether auth is enabled. While auth is on, only users with the root role
// may call most of it; a user may get itself and its roles.
type Auth interface {
	// Authenticate exchanges a user's password for a token. A Client with
	// Config.Username does this itself; call it to get a token for
	// another purpose.
	Authenticate(ctx context.Context, name, password string) (*AuthenticateResponse, error)
	AuthEnable(ctx context.Context) (*AuthEnableResponse, error)
	AuthDisable(ctx context.Context) (*AuthDisableResponse, error)
	// AuthStatus answers even with an expired token.
	AuthStatus(ctx context.Context) (*AuthStatusResponse, error)

	UserAdd(ctx context.Context, name, password string) (*AuthUserAddResponse, error)
	// UserAddWithOptions adds a user; with NoPassword the user can only be
	// identified by a TLS client certificate.
	UserAddWithOptions(ctx context.Context, name, password string, opt *UserAddOptions) (*AuthUserAddResponse, error)
	UserDelete(ctx context.Context, name string) (*AuthUserDeleteResponse, error)
	UserChangePassword(ctx context.Context, name, password string) (*AuthUserChangePasswordResponse, error)
	UserGrantRole(ctx context.Context, user, role string) (*AuthUserGrantRoleResponse, error)
	UserGet(ctx context.Context, name string) (*AuthUserGetResponse, error)
	UserList(ctx context.Context) (*AuthUserListResponse, error)
	UserRevokeRole(ctx context.Context, name, role string) (*AuthUserRevokeRoleResponse, error)

	RoleAdd(ctx context.Context, name string) (*AuthRoleAddResponse, error)
	// RoleGrantPermission lets role access key (rangeEnd empty), the range
	// [key, rangeEnd), or every key from key on (rangeEnd "\x00").
	RoleGrantPermission(ctx context.Context, name, key, rangeEnd string, permType PermissionType) (*AuthRoleGrantPermissionResponse, error)
	RoleGet(ctx context.Context, role string) (*AuthRoleGetResponse, error)
	RoleList(ctx context.Context) (*AuthRoleListResponse, error)
	// RoleRevokePermission removes the permission granted with exactly key
	// and rangeEnd.
	RoleRevokePermission(ctx context.Context, role, key, rangeEnd string) (*AuthRoleRevokePermissionResponse, error)
	RoleDelete(ctx context.Context, role string) (*AuthRoleDeleteResponse, error)
}

type authClient struct{ remote pb.AuthClient }

// NewAuth returns the Auth API of c.
func NewAuth(c *Client) Auth { return newAuth(c) }

func newAuth(c *Client) *authClient { return &authClient{remote: pb.NewAuthClient(c.conn)} }

func (a *authClient) Authenticate(ctx context.Context, name, password string) (*AuthenticateResponse, error) {
	return call(ctx, a.remote.Authenticate, &pb.AuthenticateRequest{Name: name, Password: password})
}

func (a *authClient) AuthEnable(ctx context.Context) (*AuthEnableResponse, error) {
	return call(ctx, a.remote.AuthEnable, &pb.AuthEnableRequest{})
}

func (a *authClient) AuthDisable(ctx context.Context) (*AuthDisableResponse, error) {
	return call(ctx, a.remote.AuthDisable, &pb.AuthDisableRequest{})
}

func (a *authClient) AuthStatus(ctx context.Context) (*AuthStatusResponse, error) {
	return call(ctx, a.remote.AuthStatus, &pb.AuthStatusRequest{})
}

func (a *authClient) UserAdd(ctx context.Context, name, password string) (*AuthUserAddResponse, error) {
	return a.UserAddWithOptions(ctx, name, password, &UserAddOptions{})
}

func (a *authClient) UserAddWithOptions(ctx context.Context, name, password string, opt *UserAddOptions) (*AuthUserAddResponse, error) {
	return call(ctx, a.remote.UserAdd, &pb.AuthUserAddRequest{Name: name, Password: password, Options: opt})
}

func (a *authClient) UserDelete(ctx context.Context, name string) (*AuthUserDeleteResponse, error) {
	return call(ctx, a.remote.UserDelete, &pb.AuthUserDeleteRequest{Name: name})
}

func (a *authClient) UserChangePassword(ctx context.Context, name, password string) (*AuthUserChangePasswordResponse, error) {
	return call(ctx, a.remote.UserChangePassword, &pb.AuthUserChangePasswordRequest{Name: name, Password: password})
}

func (a *authClient) UserGrantRole(ctx context.Context, user, role string) (*AuthUserGrantRoleResponse, error) {
	return call(ctx, a.remote.UserGrantRole, &pb.AuthUserGrantRoleRequest{User: user, Role: role})
}

func (a *authClient) UserGet(ctx context.Context, name string) (*AuthUserGetResponse, error) {
	return call(ctx, a.remote.UserGet, &pb.AuthUserGetRequest{Name: name})
}

func (a *authClient) UserList(ctx context.Context) (*AuthUserListResponse, error) {
	return call(ctx, a.remote.UserList, &pb.AuthUserListRequest{})
}

func (a *authClient) UserRevokeRole(ctx context.Context, name, role string) (*AuthUserRevokeRoleResponse, error) {
	return call(ctx, a.remote.UserRevokeRole, &pb.AuthUserRevokeRoleRequest{Name: name, Role: role})
}

func (a *authClient) RoleAdd(ctx context.Context, name string) (*AuthRoleAddResponse, error) {
	return call(ctx, a.remote.RoleAdd, &pb.AuthRoleAddRequest{Name: name})
}

func (a *authClient) RoleGrantPermission(ctx context.Context, name, key, rangeEnd string, permType PermissionType) (*AuthRoleGrantPermissionResponse, error) {
	perm := &authpb.Permission{Key: []byte(key), RangeEnd: []byte(rangeEnd), PermType: permType}
	return call(ctx, a.remote.RoleGrantPermission, &pb.AuthRoleGrantPermissionRequest{Name: name, Perm: perm})
}

func (a *authClient) RoleGet(ctx context.Context, role string) (*AuthRoleGetResponse, error) {
	return call(ctx, a.remote.RoleGet, &pb.AuthRoleGetRequest{Role: role})
}

func (a *authClient) RoleList(ctx context.Context) (*AuthRoleListResponse, error) {
	return call(ctx, a.remote.RoleList, &pb.AuthRoleListRequest{})
}

func (a *authClient) RoleRevokePermission(ctx context.Context, role, key, rangeEnd string) (*AuthRoleRevokePermissionResponse, error) {
	req := &pb.AuthRoleRevokePermissionRequest{Role: role, Key: []byte(key), RangeEnd: []byte(rangeEnd)}
	return call(ctx, a.remote.RoleRevokePermission, req)
}

func (a *authClient) RoleDelete(ctx context.Context, role string) (*AuthRoleDeleteResponse, error) {
	return call(ctx, a.remote.RoleDelete, &pb.AuthRoleDeleteRequest{Role: role})
}
