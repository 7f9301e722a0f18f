package concurrency

import (
	"context"
	"time"

	"github.com/cairnkv/cairn/client"
)

// defaultSessionTTL is etcd's session TTL in seconds.
const defaultSessionTTL = 60

// Session is a lease that is kept alive until the session is closed or
// orphaned, the lease expires, or the client closes. Keys a recipe writes
// for the session are attached to the lease, so they vanish when the
// process holding the session dies.
type Session struct {
	client *client.Client
	ttl    int
	ctx    context.Context // the caller's (WithContext), for Grant and Revoke
	id     client.LeaseID

	keepCtx   context.Context // canceled when the keep-alive stops
	stopKeep  context.CancelFunc
	keepEnded chan struct{}
}

type sessionOptions struct {
	ttl   int
	lease client.LeaseID
	ctx   context.Context
}

// SessionOption configures NewSession.
type SessionOption func(*sessionOptions)

// WithTTL sets the TTL in seconds of the lease NewSession grants (default
// 60). A TTL <= 0 keeps the default.
func WithTTL(ttl int) SessionOption {
	return func(o *sessionOptions) {
		if ttl > 0 {
			o.ttl = ttl
		}
	}
}

// WithLease makes the session keep an existing lease alive instead of
// granting one, for example to take over a leadership after a restart.
func WithLease(id client.LeaseID) SessionOption {
	return func(o *sessionOptions) { o.lease = id }
}

// WithContext sets the context of the session's own requests (Grant,
// KeepAlive, Revoke) instead of the client's. Canceling it stops the
// keep-alive; if that happens before Close revokes the lease, the lease is
// left to expire.
func WithContext(ctx context.Context) SessionOption {
	return func(o *sessionOptions) { o.ctx = ctx }
}

// NewSession grants a lease (unless WithLease names one) and keeps it alive.
func NewSession(c *client.Client, opts ...SessionOption) (*Session, error) {
	o := sessionOptions{ttl: defaultSessionTTL, ctx: c.Ctx()}
	for _, opt := range opts {
		opt(&o)
	}
	id := o.lease
	if id == client.NoLease {
		resp, err := c.Grant(o.ctx, int64(o.ttl))
		if err != nil {
			return nil, err
		}
		id = resp.ID
	}
	keepCtx, stop := context.WithCancel(o.ctx)
	acks, err := c.KeepAlive(keepCtx, id)
	if err != nil {
		stop()
		return nil, err
	}
	s := &Session{client: c, ttl: o.ttl, ctx: o.ctx, id: id,
		keepCtx: keepCtx, stopKeep: stop, keepEnded: make(chan struct{})}
	go s.drain(acks)
	return s, nil
}

// drain consumes the keep-alive acknowledgements; the channel closes when
// the keep-alive stops for whatever reason, which ends the session.
func (s *Session) drain(acks <-chan *client.LeaseKeepAliveResponse) {
	defer close(s.keepEnded)
	defer s.stopKeep()
	for range acks {
	}
}

// Client is the session's client.
func (s *Session) Client() *client.Client { return s.client }

// Lease is the session's lease ID.
func (s *Session) Lease() client.LeaseID { return s.id }

// Ctx is canceled when the session ends: orphaned, closed, expired or no
// longer refreshed.
func (s *Session) Ctx() context.Context { return s.keepCtx }

// Done is closed when the session ends (see Ctx).
func (s *Session) Done() <-chan struct{} { return s.keepEnded }

// Orphan stops keeping the lease alive without revoking it: the lease
// expires after its TTL unless someone else refreshes it. Use it when the
// lease changes hands or the connection's state is unknown.
func (s *Session) Orphan() {
	s.stopKeep()
	<-s.keepEnded
}

// Close orphans the session and revokes its lease, which deletes every key
// attached to it. The revoke gives up after the TTL: by then the lease has
// expired anyway.
func (s *Session) Close() error {
	s.Orphan()
	ctx, cancel := context.WithTimeout(s.ctx, time.Duration(s.ttl)*time.Second)
	defer cancel()
	_, err := s.client.Revoke(ctx, s.id)
	return err
}
