package etcdserver

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/cairnkv/cairn/server/auth"
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
	if s.stores.auth != nil {
		s.stores.auth.Recover(be)
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
	s.stores.auth = auth.New(auth.Config{Backend: be, Tokens: tp, BcryptCost: int(s.cfg.BcryptCost), Logger: s.lg})
	s.gate.store = s.stores.auth
	s.authAdmin = newAuthAdmin(s.stores.auth, s.view(), s.lg)
	return nil
}

// AuthStore is the member's auth store.
func (s *Server) AuthStore() *auth.Store { return s.stores.auth }

// rootKey marks a context of the member's own requests (revoking expired
// leases), which act as root.
type rootKey struct{}

func withRoot(ctx context.Context) context.Context { return context.WithValue(ctx, rootKey{}, true) }

// authGate answers the member's auth questions about a request: who sent
// it (token, --client-cert-auth certificate, or the member itself), and
// whether that sender may do what it asks, against the auth store's applied
// state.
type authGate struct {
	store    *auth.Store // set when the member opens its stores (openAuth)
	certAuth bool        // --client-cert-auth names users by certificate
}

// authInfo resolves the token of ctx's gRPC metadata: nil and no error when
// auth is off or the request has no token.
func (g *authGate) authInfo(ctx context.Context) (*auth.AuthInfo, error) {
	if root, _ := ctx.Value(rootKey{}).(bool); root {
		return &auth.AuthInfo{Username: "root", Revision: g.store.Revision()}, nil
	}
	if !g.store.IsAuthEnabled() {
		return nil, nil // every proposal asks: decide it once, before any metadata work
	}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if token, ok := auth.TokenFromMetadata(md); ok {
			return g.store.AuthInfoFromToken(ctx, token)
		}
	}
	return g.authInfoFromCert(ctx), nil
}

// authInfoFromCert names the user by the common name of the client's
// verified certificate when --client-cert-auth is on and the request carries
// no token, as etcd does. Requests through the JSON gateway arrive on an
// in-process connection without TLS state, so they never match.
func (g *authGate) authInfoFromCert(ctx context.Context) *auth.AuthInfo {
	if !g.certAuth {
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
	return &auth.AuthInfo{Username: cn, Revision: g.store.Revision()}
}

// authInfoOrEmpty is authInfo with "no user" as an empty AuthInfo.
func (g *authGate) authInfoOrEmpty(ctx context.Context) (auth.AuthInfo, error) {
	ai, err := g.authInfo(ctx)
	if err != nil || ai == nil {
		return auth.AuthInfo{}, err
	}
	return *ai, nil
}

// stampAuth puts the sender of ctx into the header of a proposal. Authenticate
// ignores any token it carries: a stale token must not stop a client from
// getting a new one. Every other request, AuthStatus included, is refused
// when its token is invalid (see AuthStatus).
func (g *authGate) stampAuth(ctx context.Context, r *pb.InternalRaftRequest) error {
	if r.Authenticate != nil {
		return nil
	}
	ai, err := g.authInfo(ctx)
	if err != nil || ai == nil {
		return err
	}
	r.Header.Username, r.Header.AuthRevision = ai.Username, ai.Revision
	return nil
}

// authorizedRead runs check, then read, for a read served locally; it fails
// with ErrAuthOldRevision when the auth revision moved past the token's
// meanwhile (the check may have used rights the user no longer has).
func (g *authGate) authorizedRead(ctx context.Context, check func(auth.AuthInfo) error, read func(auth.AuthInfo) error) error {
	ai, err := g.authInfoOrEmpty(ctx)
	if err != nil {
		return err
	}
	if err := check(ai); err != nil {
		return err
	}
	if err := read(ai); err != nil {
		return err
	}
	if ai.Revision != 0 && ai.Revision != g.store.Revision() {
		return auth.ErrAuthOldRevision
	}
	return nil
}

func noCheck(auth.AuthInfo) error { return nil }

// rangePermitted checks that ai may read [key, end).
func (g *authGate) rangePermitted(ai auth.AuthInfo, key, end []byte) error {
	return g.store.IsRangePermitted(ai, key, end)
}

// AdminPermitted fails unless ctx's sender has the root role (or auth is
// off): member changes, compaction and most maintenance calls.
func (g *authGate) AdminPermitted(ctx context.Context) error {
	ai, err := g.authInfoOrEmpty(ctx)
	if err != nil {
		return err
	}
	return g.store.IsAdminPermitted(ai)
}

// RequireAuthInfo fails when auth is on and ctx names no user (or a token
// that does not check out).
func (g *authGate) RequireAuthInfo(ctx context.Context) error {
	if !g.store.IsAuthEnabled() {
		return nil
	}
	switch ai, err := g.authInfo(ctx); {
	case err != nil:
		return err
	case ai == nil:
		return auth.ErrUserEmpty
	default:
		return nil
	}
}

// IsWatchPermitted checks that ctx's sender may read the watched range.
func (g *authGate) IsWatchPermitted(ctx context.Context, key, end []byte) error {
	ai, err := g.authInfoOrEmpty(ctx)
	if err != nil {
		return err
	}
	return g.store.IsRangePermitted(ai, key, end)
}

// leaseKeysPermitted lets an admin through and checks that anyone else may
// read (write: write) every key of leases; it fails with
// ErrAuthOldRevision if the auth revision moved while it ran.
func (g *authGate) leaseKeysPermitted(ctx context.Context, leases []*lease.Lease, write bool) error {
	rev := g.store.Revision()
	if !g.store.IsAuthEnabled() {
		return nil
	}
	ai, err := g.authInfo(ctx)
	if err != nil {
		return err
	}
	if ai == nil {
		return auth.ErrUserEmpty
	}
	if g.store.IsAdminPermitted(*ai) == nil {
		return nil
	}
	for _, l := range leases {
		if l == nil {
			continue
		}
		for _, key := range l.Keys() {
			if err := keyPermitted(g.store, *ai, []byte(key), write); err != nil {
				return err
			}
		}
	}
	if rev != g.store.Revision() {
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

// AdminPermitted fails unless ctx's sender has the root role (or auth is
// off): member changes, compaction and most maintenance calls.
func (s *Server) AdminPermitted(ctx context.Context) error { return s.gate.AdminPermitted(ctx) }

// RequireAuthInfo fails when auth is on and ctx names no user.
func (s *Server) RequireAuthInfo(ctx context.Context) error { return s.gate.RequireAuthInfo(ctx) }
