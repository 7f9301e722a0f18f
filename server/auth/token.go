package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.uber.org/zap"
)

// TokenProvider issues and resolves the tokens clients send with requests.
// Assign, Enable, Disable and InvalidateUser run in the apply step; Info and
// GenTokenPrefix in the API layer, concurrently.
type TokenProvider interface {
	// GenTokenPrefix returns the random part of a new simple token ("" for
	// other types); the API layer puts it in the Authenticate entry so that
	// every member issues the same token.
	GenTokenPrefix() (string, error)
	// Assign issues a token for req.
	Assign(req AssignRequest) (string, error)
	// Info resolves a token to its user and auth revision; ok is false for a
	// token that is unknown, expired, badly signed or malformed. It may wait
	// (until ctx ends) for the member to apply the entry that issued it.
	Info(ctx context.Context, token string) (username string, revision uint64, ok bool)
	// Enable and Disable follow AuthEnable and AuthDisable; disabling drops
	// every stateful token.
	Enable()
	Disable()
	// InvalidateUser drops the user's stateful tokens (deleted user, new
	// password).
	InvalidateUser(username string)
}

// AssignRequest is what Authenticate hands to TokenProvider.Assign.
type AssignRequest struct {
	Username string
	// Revision is the auth revision at issue time; a JWT carries it.
	Revision uint64
	// Prefix (from GenTokenPrefix) and Index (the raft index of the
	// Authenticate entry) make a simple token "<Prefix>.<Index>".
	Prefix string
	Index  uint64
}

// Clock is the token providers' source of time (token expiry only; nothing
// persisted depends on it).
type Clock interface{ Now() time.Time }

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// TokenConfig carries what NewTokenProvider needs besides the option string.
type TokenConfig struct {
	// SimpleTTL is --auth-token-ttl, the idle lifetime of a simple token;
	// 0 or less means 300 s.
	SimpleTTL time.Duration
	// WaitIndex returns a channel closed once the member has applied the
	// raft entry at index. A simple token is resolved only after its
	// Authenticate entry was applied locally, so a client that moves to a
	// lagging member waits rather than fails. nil means do not wait.
	WaitIndex func(index uint64) <-chan struct{}
	// Clock defaults to RealClock.
	Clock Clock
	// Logger defaults to a no-op logger.
	Logger *zap.Logger
}

// Token types of --auth-token.
const (
	tokenTypeSimple = "simple"
	tokenTypeJWT    = "jwt"
)

// NewTokenProvider parses etcd's --auth-token option: a type, then
// comma-separated name=value options. "simple" ignores the options; "jwt"
// takes sign-method (required), pub-key and priv-key (PEM file paths; an
// HMAC method takes its secret from priv-key) and ttl (a Go duration,
// default 5m); "" gives a provider that issues and accepts nothing. An
// option without exactly one '=', a repeated option, an unknown type or
// unreadable JWT options give ErrInvalidAuthOpts; bad keys give
// ErrMissingKey, ErrKeyMismatch or the PEM parser's error, as in etcd.
func NewTokenProvider(opts string, cfg TokenConfig) (TokenProvider, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	tokenType, typeOpts, err := decomposeOpts(opts)
	if err != nil {
		cfg.Logger.Error("invalid token option", zap.String("option", opts))
		return nil, err
	}
	switch tokenType {
	case tokenTypeSimple:
		cfg.Logger.Warn("simple token is not cryptographically signed")
		return newSimpleTokens(cfg), nil
	case tokenTypeJWT:
		tp, err := newJWTTokens(typeOpts, cfg)
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return tp, nil
	case "":
		return nopTokens{}, nil
	default:
		cfg.Logger.Warn("unknown token type", zap.String("type", tokenType))
		return nil, ErrInvalidAuthOpts
	}
}

// decomposeOpts splits "type,k1=v1,k2=v2". A value may not contain '=' or
// ',' (etcd splits on both).
func decomposeOpts(opts string) (string, map[string]string, error) {
	parts := strings.Split(opts, ",")
	typeOpts := make(map[string]string)
	for _, part := range parts[1:] {
		pair := strings.Split(part, "=")
		if len(pair) != 2 {
			return "", nil, ErrInvalidAuthOpts
		}
		if _, dup := typeOpts[pair[0]]; dup {
			return "", nil, ErrInvalidAuthOpts
		}
		typeOpts[pair[0]] = pair[1]
	}
	return parts[0], typeOpts, nil
}

// TokenFromMetadata finds the token in a request's gRPC metadata
// (metadata.MD): the "token" key, else "authorization" (the JSON gateway),
// without a "Bearer " prefix.
func TokenFromMetadata(md map[string][]string) (string, bool) {
	ts, ok := md[rpctypes.TokenFieldNameGRPC]
	if !ok {
		ts, ok = md[rpctypes.TokenFieldNameSwagger]
	}
	if !ok || len(ts) == 0 {
		return "", false
	}
	return strings.TrimPrefix(ts[0], "Bearer "), true
}

// revisionBinder is implemented by providers whose tokens carry no
// revision: New hands them the store's Revision.
type revisionBinder interface {
	bindRevision(func() uint64)
}

// nopTokens is the provider of an empty --auth-token: no token is valid.
type nopTokens struct{}

func (nopTokens) GenTokenPrefix() (string, error)                     { return "", nil }
func (nopTokens) Assign(AssignRequest) (string, error)                { return "", ErrAuthFailed }
func (nopTokens) Info(context.Context, string) (string, uint64, bool) { return "", 0, false }
func (nopTokens) Enable()                                             {}
func (nopTokens) Disable()                                            {}
func (nopTokens) InvalidateUser(string)                               {}

// redactToken is a short fingerprint of a token, safe to log.
func redactToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])[:12]
}
