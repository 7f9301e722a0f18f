package client

import (
	"context"
	"errors"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// ErrMutuallyExclusiveCfg is returned by New when a Config sets both a
// token and a username or password.
var ErrMutuallyExclusiveCfg = errors.New("Username/Password and Token configurations are mutually exclusive")

const authenticateMethod = "/etcdserverpb.Auth/Authenticate"

// tokens holds the auth token the client sends with every request. With a
// username and password it gets the token from Authenticate, once when the
// client is made and again whenever the server stops accepting it (expired,
// invalidated by a password change, or issued before the auth metadata
// changed); a token set in Config is sent as it is and never replaced.
type tokens struct {
	user, password string
	fixed          bool
	authenticate   authenticateFunc

	mu    sync.RWMutex
	token string

	// refreshing admits one Authenticate at a time: requests that fail
	// together with the same stale token wait for one new token instead
	// of each paying for a bcrypt check on the server.
	refreshing chan struct{}
}

type authenticateFunc = func(ctx context.Context, user, password string) (*AuthenticateResponse, error)

func newTokens(cfg Config, authenticate authenticateFunc) *tokens {
	ts := &tokens{refreshing: make(chan struct{}, 1), authenticate: authenticate}
	switch {
	case cfg.Token != "":
		ts.fixed, ts.token = true, cfg.Token
	case cfg.Username != "" && cfg.Password != "":
		// As with etcd's client, a username without a password sends
		// no credentials.
		ts.user, ts.password = cfg.Username, cfg.Password
	}
	return ts
}

func (ts *tokens) current() string {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	return ts.token
}

// attach puts token into ctx's outgoing metadata. Authenticate never
// carries one: a stale token must not fail the call that replaces it.
func attachToken(ctx context.Context, method, token string) context.Context {
	if token == "" || method == authenticateMethod {
		return ctx
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	md.Set(rpctypes.TokenFieldNameGRPC, token)
	return metadata.NewOutgoingContext(ctx, md)
}

// refreshable reports whether a new token from Authenticate may cure err.
func (ts *tokens) refreshable(method string, err error) bool {
	if ts.user == "" || method == authenticateMethod {
		return false
	}
	return isTokenRejection(rpctypes.ErrorDesc(err))
}

// isTokenRejection reports whether desc (an error text, or a canceled
// watch's reason) says the server did not accept the request's token.
func isTokenRejection(desc string) bool {
	for _, e := range []error{rpctypes.ErrInvalidAuthToken, rpctypes.ErrAuthOldRevision, rpctypes.ErrUserEmpty} {
		if strings.Contains(desc, rpctypes.ErrorDesc(e)) {
			return true
		}
	}
	return false
}

// refresh replaces stale with a new token. When another request already
// replaced it, the new token is used as it is.
func (ts *tokens) refresh(ctx context.Context, stale string) error {
	select {
	case ts.refreshing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-ts.refreshing }()
	if ts.current() != stale {
		return nil
	}
	return ts.fetch(ctx)
}

// fetch authenticates and stores the token. A server with auth disabled
// has no token to give; requests then go without one.
func (ts *tokens) fetch(ctx context.Context) error {
	if ts.user == "" {
		return nil
	}
	resp, err := ts.authenticate(ctx, ts.user, ts.password)
	token := ""
	switch {
	case errors.Is(err, rpctypes.ErrAuthNotEnabled):
	case err != nil:
		return err
	default:
		token = resp.Token
	}
	ts.mu.Lock()
	ts.token = token
	ts.mu.Unlock()
	return nil
}

// reauthStream is a server-streaming call (Snapshot, RangeStream) whose
// token the server may refuse with its first answer: it then gets a new
// token and makes the call again, once, before the caller sees anything.
type reauthStream struct {
	grpc.ClientStream
	ctx    context.Context
	c      *Client
	method string
	token  string
	open   func(ctx context.Context) (grpc.ClientStream, error)

	req      any // the one request of the call
	closed   bool
	answered bool
}

func (s *reauthStream) SendMsg(m any) error {
	s.req = m
	return s.ClientStream.SendMsg(m)
}

func (s *reauthStream) CloseSend() error {
	s.closed = true
	return s.ClientStream.CloseSend()
}

func (s *reauthStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if s.answered || err == nil || s.req == nil || !s.c.tokens.refreshable(s.method, err) {
		s.answered = true
		return err
	}
	s.answered = true
	if rerr := s.c.tokens.refresh(s.ctx, s.token); rerr != nil {
		return rerr
	}
	cs, oerr := s.open(attachToken(s.ctx, s.method, s.c.tokens.current()))
	if oerr != nil {
		return oerr
	}
	s.ClientStream = cs
	if err := cs.SendMsg(s.req); err != nil {
		return err
	}
	if s.closed {
		if err := cs.CloseSend(); err != nil {
			return err
		}
	}
	return cs.RecvMsg(m)
}
