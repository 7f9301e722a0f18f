package etcdserver

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
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
	s.authAdmin = newAuthAdmin(s.authStore, s, s.lg)
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

// leaseKeysPermitted lets an admin through and checks that anyone else may
// read (write: write) every key of leases; it fails with
// ErrAuthOldRevision if the auth revision moved while it ran.
func (s *Server) leaseKeysPermitted(ctx context.Context, leases []*lease.Lease, write bool) error {
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
			if err := keyPermitted(s.authStore, *ai, []byte(key), write); err != nil {
				return err
			}
		}
	}
	if rev != s.authStore.Revision() {
		return auth.ErrAuthOldRevision
	}
	return nil
}

func keyPermitted(as *auth.Store, ai auth.AuthInfo, key []byte, write bool) error {
	if write {
		return as.IsPutPermitted(ai, key)
	}
	return as.IsRangePermitted(ai, key, nil)
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
