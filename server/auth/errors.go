package auth

import (
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// Errors of the store and the token providers, with etcd's texts.
var (
	// ErrRootUserNotExist: AuthEnable without a user named root.
	ErrRootUserNotExist = errors.New("auth: root user does not exist")
	// ErrRootRoleNotExist: AuthEnable while the root user lacks the root role.
	ErrRootRoleNotExist = errors.New("auth: root user does not have root role")
	// ErrUserAlreadyExist: UserAdd of an existing name.
	ErrUserAlreadyExist = errors.New("auth: user already exists")
	// ErrUserEmpty: UserAdd with an empty name, or a permission check with no
	// user in the request header while auth is enabled.
	ErrUserEmpty = errors.New("auth: user name is empty")
	// ErrUserNotFound: the request names a user that does not exist.
	ErrUserNotFound = errors.New("auth: user not found")
	// ErrRoleAlreadyExist: RoleAdd of an existing name.
	ErrRoleAlreadyExist = errors.New("auth: role already exists")
	// ErrRoleNotFound: the request names a role that does not exist.
	ErrRoleNotFound = errors.New("auth: role not found")
	// ErrRoleEmpty: RoleAdd with an empty name.
	ErrRoleEmpty = errors.New("auth: role name is empty")
	// ErrPermissionNotGiven: RoleGrantPermission without a permission.
	ErrPermissionNotGiven = errors.New("auth: permission not given")
	// ErrAuthFailed: wrong user or password, or a token was requested for a
	// user that does not exist or has no password.
	ErrAuthFailed = errors.New("auth: authentication failed, invalid user ID or password")
	// ErrNoPasswordUser: CheckPassword for a user created with NoPassword, or
	// a hashed password that is not valid base64.
	ErrNoPasswordUser = errors.New("auth: authentication failed, password was given for no password user")
	// ErrPermissionDenied: the user may not do what the request asks.
	ErrPermissionDenied = errors.New("auth: permission denied")
	// ErrRoleNotGranted: UserRevokeRole of a role the user does not have.
	ErrRoleNotGranted = errors.New("auth: role is not granted to the user")
	// ErrPermissionNotGranted: RoleRevokePermission of a range the role lacks.
	ErrPermissionNotGranted = errors.New("auth: permission is not granted to the role")
	// ErrAuthNotEnabled: CheckPassword or Authenticate while auth is disabled.
	ErrAuthNotEnabled = errors.New("auth: authentication is not enabled")
	// ErrAuthOldRevision: the request header's auth revision is older than
	// the store's; the client must authenticate again.
	ErrAuthOldRevision = errors.New("auth: revision in header is old")
	// ErrInvalidAuthToken: a token that no provider accepts.
	ErrInvalidAuthToken = errors.New("auth: invalid auth token")
	// ErrInvalidAuthOpts: an --auth-token option string etcd rejects.
	ErrInvalidAuthOpts = errors.New("auth: invalid auth options")
	// ErrInvalidAuthMgmt: deleting root, revoking root's root role while auth
	// is enabled, or granting a permission with an invalid key range.
	ErrInvalidAuthMgmt = errors.New("auth: invalid auth management")
	// ErrInvalidAuthMethod: a JWT sign-method etcd does not know.
	ErrInvalidAuthMethod = errors.New("auth: invalid auth signature method")
	// ErrMissingKey: JWT options without the key the sign method needs.
	ErrMissingKey = errors.New("auth: missing key data")
	// ErrKeyMismatch: the JWT public and private keys are not a pair.
	ErrKeyMismatch = errors.New("auth: public and private keys don't match")
	// ErrVerifyOnly: a JWT provider with only a public key cannot sign.
	ErrVerifyOnly = errors.New("auth: token signing attempted with verify-only key")
	// ErrNameTooLong: a user or role name longer than the backend can keep
	// as a key (bbolt's 32 KiB). etcd has no check and its members crash
	// applying such a request; cairn refuses it, on every member alike,
	// with etcd's "request is too large".
	ErrNameTooLong = errors.New("auth: name is too long")
)

// maxNameBytes is the longest user or role name: bbolt's key size limit.
const maxNameBytes = 32768

// GRPCErrors maps each error of this package that etcd's gRPC layer knows to
// the status etcd answers with. Errors missing here reach the client as
// codes.Unknown with their text, as in etcd.
var GRPCErrors = map[error]error{
	ErrRootUserNotExist:     rpctypes.ErrGRPCRootUserNotExist,
	ErrRootRoleNotExist:     rpctypes.ErrGRPCRootRoleNotExist,
	ErrUserAlreadyExist:     rpctypes.ErrGRPCUserAlreadyExist,
	ErrUserEmpty:            rpctypes.ErrGRPCUserEmpty,
	ErrUserNotFound:         rpctypes.ErrGRPCUserNotFound,
	ErrRoleAlreadyExist:     rpctypes.ErrGRPCRoleAlreadyExist,
	ErrRoleNotFound:         rpctypes.ErrGRPCRoleNotFound,
	ErrRoleEmpty:            rpctypes.ErrGRPCRoleEmpty,
	ErrAuthFailed:           rpctypes.ErrGRPCAuthFailed,
	ErrPermissionNotGiven:   rpctypes.ErrGRPCPermissionNotGiven,
	ErrPermissionDenied:     rpctypes.ErrGRPCPermissionDenied,
	ErrRoleNotGranted:       rpctypes.ErrGRPCRoleNotGranted,
	ErrPermissionNotGranted: rpctypes.ErrGRPCPermissionNotGranted,
	ErrAuthNotEnabled:       rpctypes.ErrGRPCAuthNotEnabled,
	ErrInvalidAuthToken:     rpctypes.ErrGRPCInvalidAuthToken,
	ErrInvalidAuthMgmt:      rpctypes.ErrGRPCInvalidAuthMgmt,
	ErrAuthOldRevision:      rpctypes.ErrGRPCAuthOldRevision,
	ErrNameTooLong:          rpctypes.ErrGRPCRequestTooLarge,
}
