package etcdserver

import (
	"context"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/cairnkv/cairn/server/auth"
	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/lease"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// Auth on the member. The auth store outlives the backend: a snapshot
// install hands it the new backend (Recover). The API layer resolves a
// request's token (gRPC metadata "token", or "authorization" from the JSON
// gateway) and stamps the sender into the header of every proposal; the apply
// step checks it. Reads served locally are checked here, against the state
// applied so far, and fail with ErrAuthOldRevision if the auth state moved
// while they ran.

// openAuth gives the auth store the backend, creating the store (and its
// token provider) on first use.
func (s *Server) openAuth(be backend.Backend) error {
	if s.authStore != nil {
		s.authStore.Recover(be)
		return nil
	}
	tp, err := auth.NewTokenProvider(s.cfg.AuthToken, auth.TokenConfig{
		SimpleTTL: time.Duration(s.cfg.AuthTokenTTL) * time.Second,
		WaitIndex: func(index uint64) <-chan struct{} { return s.appliedWait.Wait(index) },
		Logger:    s.lg,
	})
	if err != nil {
		return err
	}
	s.authStore = auth.New(auth.Config{Backend: be, Tokens: tp, BcryptCost: int(s.cfg.BcryptCost), Logger: s.lg})
	return nil
}

// AuthStore is the member's auth store.
func (s *Server) AuthStore() *auth.Store { return s.authStore }

// rootKey marks a context of the member's own requests (revoking expired
// leases), which act as root.
type rootKey struct{}

func withRoot(ctx context.Context) context.Context { return context.WithValue(ctx, rootKey{}, true) }

// authInfo resolves the token of ctx's gRPC metadata: nil and no error when
// auth is off or the request has no token.
func (s *Server) authInfo(ctx context.Context) (*auth.AuthInfo, error) {
	if root, _ := ctx.Value(rootKey{}).(bool); root {
		return &auth.AuthInfo{Username: "root", Revision: s.authStore.Revision()}, nil
	}
	if !s.authStore.IsAuthEnabled() {
		return nil, nil // every proposal asks: decide it once, before any metadata work
	}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if token, ok := auth.TokenFromMetadata(md); ok {
			return s.authStore.AuthInfoFromToken(ctx, token)
		}
	}
	return s.authInfoFromCert(ctx), nil
}

// authInfoFromCert names the user by the common name of the client's
// verified certificate when --client-cert-auth is on and the request carries
// no token, as etcd does. Requests through the JSON gateway arrive on an
// in-process connection without TLS state, so they never match.
func (s *Server) authInfoFromCert(ctx context.Context) *auth.AuthInfo {
	if !s.cfg.ClientCertAuth {
		return nil
	}
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return nil
	}
	cn := info.State.VerifiedChains[0][0].Subject.CommonName
	if cn == "" {
		return nil
	}
	return &auth.AuthInfo{Username: cn, Revision: s.authStore.Revision()}
}

// authInfoOrEmpty is authInfo with "no user" as an empty AuthInfo.
func (s *Server) authInfoOrEmpty(ctx context.Context) (auth.AuthInfo, error) {
	ai, err := s.authInfo(ctx)
	if err != nil || ai == nil {
		return auth.AuthInfo{}, err
	}
	return *ai, nil
}

// stampAuth puts the sender of ctx into the header of a proposal. Authenticate
// ignores any token it carries: a stale token must not stop a client from
// getting a new one. Every other request, AuthStatus included, is refused
// when its token is invalid (see AuthStatus).
func (s *Server) stampAuth(ctx context.Context, r *pb.InternalRaftRequest) error {
	if r.Authenticate != nil {
		return nil
	}
	ai, err := s.authInfo(ctx)
	if err != nil || ai == nil {
		return err
	}
	r.Header.Username, r.Header.AuthRevision = ai.Username, ai.Revision
	return nil
}

// authorizedRead runs check, then read, for a read served locally; it fails
// with ErrAuthOldRevision when the auth revision moved past the token's
// meanwhile (the check may have used rights the user no longer has).
func (s *Server) authorizedRead(ctx context.Context, check func(auth.AuthInfo) error, read func(auth.AuthInfo) error) error {
	ai, err := s.authInfoOrEmpty(ctx)
	if err != nil {
		return err
	}
	if err := check(ai); err != nil {
		return err
	}
	if err := read(ai); err != nil {
		return err
	}
	if ai.Revision != 0 && ai.Revision != s.authStore.Revision() {
		return auth.ErrAuthOldRevision
	}
	return nil
}

func noCheck(auth.AuthInfo) error { return nil }

// AdminPermitted fails unless ctx's sender has the root role (or auth is
// off): member changes, compaction and most maintenance calls.
func (s *Server) AdminPermitted(ctx context.Context) error {
	ai, err := s.authInfoOrEmpty(ctx)
	if err != nil {
		return err
	}
	return s.authStore.IsAdminPermitted(ai)
}

// RequireAuthInfo fails when auth is on and ctx names no user (or a token
// that does not check out).
func (s *Server) RequireAuthInfo(ctx context.Context) error {
	if !s.authStore.IsAuthEnabled() {
		return nil
	}
	switch ai, err := s.authInfo(ctx); {
	case err != nil:
		return err
	case ai == nil:
		return auth.ErrUserEmpty
	default:
		return nil
	}
}

// IsWatchPermitted checks that ctx's sender may read the watched range.
func (s *Server) IsWatchPermitted(ctx context.Context, key, end []byte) error {
	ai, err := s.authInfoOrEmpty(ctx)
	if err != nil {
		return err
	}
	return s.authStore.IsRangePermitted(ai, key, end)
}

// checkLeaseKeys lets an admin through and checks every key of leases with
// check for anyone else; it fails with ErrAuthOldRevision if the auth
// revision moved while it ran.
func (s *Server) checkLeaseKeys(ctx context.Context, leases []*lease.Lease, check func(auth.AuthInfo, []byte) error) error {
	rev := s.authStore.Revision()
	if !s.authStore.IsAuthEnabled() {
		return nil
	}
	ai, err := s.authInfo(ctx)
	if err != nil {
		return err
	}
	if ai == nil {
		return auth.ErrUserEmpty
	}
	if s.authStore.IsAdminPermitted(*ai) == nil {
		return nil
	}
	for _, l := range leases {
		if l == nil {
			continue
		}
		for _, key := range l.Keys() {
			if err := check(*ai, []byte(key)); err != nil {
				return err
			}
		}
	}
	if rev != s.authStore.Revision() {
		return auth.ErrAuthOldRevision
	}
	return nil
}

func (s *Server) rangeCheck(ai auth.AuthInfo, key []byte) error {
	return s.authStore.IsRangePermitted(ai, key, nil)
}

func (s *Server) putCheck(ai auth.AuthInfo, key []byte) error {
	return s.authStore.IsPutPermitted(ai, key)
}

// Authenticate checks the password here, outside raft, and proposes the
// token's issue; if the auth state changed between the check and the issue
// the password may be stale, so it checks again.
func (s *Server) Authenticate(ctx context.Context, r *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error) {
	if err := s.linearizableReadNotify(ctx); err != nil {
		return nil, err
	}
	for {
		checked, err := s.checkPassword(r.Name, r.Password)
		if err != nil {
			if err != auth.ErrAuthNotEnabled {
				s.lg.Warn("invalid authentication was requested", zap.String("user", r.Name), zap.Error(err))
			}
			return nil, err
		}
		prefix, err := s.authStore.GenTokenPrefix()
		if err != nil {
			return nil, err
		}
		req := &pb.InternalAuthenticateRequest{Name: r.Name, SimpleToken: prefix}
		resp, err := s.proposeRequest(ctx, &pb.InternalRaftRequest{Authenticate: req})
		if err != nil {
			return nil, err
		}
		if checked == s.authStore.Revision() {
			return resp.(*pb.AuthenticateResponse), nil
		}
		s.lg.Info("auth revision changed while the password was checked; checking again")
	}
}

// checkPassword holds the stores: a snapshot install must not close the
// backend the check reads.
func (s *Server) checkPassword(name, password string) (uint64, error) {
	if !s.rlockStores() {
		return 0, errs.ErrStopped
	}
	defer s.storeMu.RUnlock()
	return s.authStore.CheckPassword(name, password)
}

// proposeAuth proposes an auth request and returns its typed response.
func proposeAuth[T any](ctx context.Context, s *Server, r *pb.InternalRaftRequest) (T, error) {
	var zero T
	resp, err := s.proposeRequest(ctx, r)
	if err != nil {
		return zero, err
	}
	out, ok := resp.(T)
	if !ok {
		return zero, fmt.Errorf("etcdserver: unexpected response %T to an auth request", resp)
	}
	return out, nil
}

// AuthEnable turns auth on (root user with the root role required).
func (s *Server) AuthEnable(ctx context.Context, r *pb.AuthEnableRequest) (*pb.AuthEnableResponse, error) {
	return proposeAuth[*pb.AuthEnableResponse](ctx, s, &pb.InternalRaftRequest{AuthEnable: r})
}

// AuthDisable turns auth off.
func (s *Server) AuthDisable(ctx context.Context, r *pb.AuthDisableRequest) (*pb.AuthDisableResponse, error) {
	return proposeAuth[*pb.AuthDisableResponse](ctx, s, &pb.InternalRaftRequest{AuthDisable: r})
}

// AuthStatus reports whether auth is on and the auth revision. It goes
// through raft (so it is linearizable) and needs no token at all, so a
// client whose token expired learns the revision by asking without one.
// Like etcd v3.7.3 it refuses a request that carries an invalid or expired
// token with ErrInvalidAuthToken (docs/auth.md).
func (s *Server) AuthStatus(ctx context.Context, r *pb.AuthStatusRequest) (*pb.AuthStatusResponse, error) {
	return proposeAuth[*pb.AuthStatusResponse](ctx, s, &pb.InternalRaftRequest{AuthStatus: r})
}

// UserAdd adds a user; the password is hashed before it is proposed.
func (s *Server) UserAdd(ctx context.Context, r *pb.AuthUserAddRequest) (*pb.AuthUserAddResponse, error) {
	if err := auth.HashUserAdd(r, s.authStore.BcryptCost()); err != nil {
		return nil, err
	}
	return proposeAuth[*pb.AuthUserAddResponse](ctx, s, &pb.InternalRaftRequest{AuthUserAdd: r})
}

// UserDelete deletes a user.
func (s *Server) UserDelete(ctx context.Context, r *pb.AuthUserDeleteRequest) (*pb.AuthUserDeleteResponse, error) {
	return proposeAuth[*pb.AuthUserDeleteResponse](ctx, s, &pb.InternalRaftRequest{AuthUserDelete: r})
}

// UserChangePassword changes a password; it is hashed before it is proposed.
func (s *Server) UserChangePassword(ctx context.Context, r *pb.AuthUserChangePasswordRequest) (*pb.AuthUserChangePasswordResponse, error) {
	if err := auth.HashChangePassword(r, s.authStore.BcryptCost()); err != nil {
		return nil, err
	}
	return proposeAuth[*pb.AuthUserChangePasswordResponse](ctx, s, &pb.InternalRaftRequest{AuthUserChangePassword: r})
}

// UserGrantRole grants a role to a user.
func (s *Server) UserGrantRole(ctx context.Context, r *pb.AuthUserGrantRoleRequest) (*pb.AuthUserGrantRoleResponse, error) {
	return proposeAuth[*pb.AuthUserGrantRoleResponse](ctx, s, &pb.InternalRaftRequest{AuthUserGrantRole: r})
}

// UserRevokeRole revokes a role from a user.
func (s *Server) UserRevokeRole(ctx context.Context, r *pb.AuthUserRevokeRoleRequest) (*pb.AuthUserRevokeRoleResponse, error) {
	return proposeAuth[*pb.AuthUserRevokeRoleResponse](ctx, s, &pb.InternalRaftRequest{AuthUserRevokeRole: r})
}

// UserGet returns a user's roles (admin or the user itself).
func (s *Server) UserGet(ctx context.Context, r *pb.AuthUserGetRequest) (*pb.AuthUserGetResponse, error) {
	return proposeAuth[*pb.AuthUserGetResponse](ctx, s, &pb.InternalRaftRequest{AuthUserGet: r})
}

// UserList lists the users.
func (s *Server) UserList(ctx context.Context, r *pb.AuthUserListRequest) (*pb.AuthUserListResponse, error) {
	return proposeAuth[*pb.AuthUserListResponse](ctx, s, &pb.InternalRaftRequest{AuthUserList: r})
}

// RoleAdd adds a role.
func (s *Server) RoleAdd(ctx context.Context, r *pb.AuthRoleAddRequest) (*pb.AuthRoleAddResponse, error) {
	return proposeAuth[*pb.AuthRoleAddResponse](ctx, s, &pb.InternalRaftRequest{AuthRoleAdd: r})
}

// RoleDelete deletes a role.
func (s *Server) RoleDelete(ctx context.Context, r *pb.AuthRoleDeleteRequest) (*pb.AuthRoleDeleteResponse, error) {
	return proposeAuth[*pb.AuthRoleDeleteResponse](ctx, s, &pb.InternalRaftRequest{AuthRoleDelete: r})
}

// RoleGrantPermission grants a key permission to a role.
func (s *Server) RoleGrantPermission(ctx context.Context, r *pb.AuthRoleGrantPermissionRequest) (*pb.AuthRoleGrantPermissionResponse, error) {
	return proposeAuth[*pb.AuthRoleGrantPermissionResponse](ctx, s, &pb.InternalRaftRequest{AuthRoleGrantPermission: r})
}

// RoleRevokePermission revokes a key permission from a role.
func (s *Server) RoleRevokePermission(ctx context.Context, r *pb.AuthRoleRevokePermissionRequest) (*pb.AuthRoleRevokePermissionResponse, error) {
	return proposeAuth[*pb.AuthRoleRevokePermissionResponse](ctx, s, &pb.InternalRaftRequest{AuthRoleRevokePermission: r})
}

// RoleGet returns a role's permissions (admin or a holder of the role).
func (s *Server) RoleGet(ctx context.Context, r *pb.AuthRoleGetRequest) (*pb.AuthRoleGetResponse, error) {
	return proposeAuth[*pb.AuthRoleGetResponse](ctx, s, &pb.InternalRaftRequest{AuthRoleGet: r})
}

// RoleList lists the roles.
func (s *Server) RoleList(ctx context.Context, r *pb.AuthRoleListRequest) (*pb.AuthRoleListResponse, error) {
	return proposeAuth[*pb.AuthRoleListResponse](ctx, s, &pb.InternalRaftRequest{AuthRoleList: r})
}
