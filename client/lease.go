package client

import (
	"context"
	"errors"
	"io"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.uber.org/zap"
)

// keepAliveBuffer is the capacity of a KeepAlive channel. Responses that
// find it full are dropped: only the latest TTL matters.
const keepAliveBuffer = 16

// firstKeepAliveWindow bounds how long KeepAlive tries to reach the cluster
// before it knows the lease's TTL.
const firstKeepAliveWindow = 5 * time.Second

// LeaseGrantResponse answers Grant.
type LeaseGrantResponse struct {
	*pb.ResponseHeader
	ID    LeaseID
	TTL   int64
	Error string
}

// LeaseKeepAliveResponse is one renewal: the lease's TTL from now.
type LeaseKeepAliveResponse struct {
	*pb.ResponseHeader
	ID  LeaseID
	TTL int64
}

// LeaseTimeToLiveResponse answers TimeToLive; TTL is -1 for an unknown or
// expired lease.
type LeaseTimeToLiveResponse struct {
	*pb.ResponseHeader
	ID         LeaseID
	TTL        int64
	GrantedTTL int64
	Keys       [][]byte
}

// LeaseStatus is one lease of Leases.
type LeaseStatus struct{ ID LeaseID }

// LeaseLeasesResponse answers Leases.
type LeaseLeasesResponse struct {
	*pb.ResponseHeader
	Leases []LeaseStatus
}

// LeaseOption changes a TimeToLive request.
type LeaseOption func(*pb.LeaseTimeToLiveRequest)

// WithAttachedKeys makes TimeToLive list the lease's keys.
func WithAttachedKeys() LeaseOption {
	return func(r *pb.LeaseTimeToLiveRequest) { r.Keys = true }
}

// Lease grants, renews and revokes leases.
type Lease interface {
	Grant(ctx context.Context, ttl int64) (*LeaseGrantResponse, error)
	Revoke(ctx context.Context, id LeaseID) (*LeaseRevokeResponse, error)
	TimeToLive(ctx context.Context, id LeaseID, opts ...LeaseOption) (*LeaseTimeToLiveResponse, error)
	Leases(ctx context.Context) (*LeaseLeasesResponse, error)
	// KeepAlive renews the lease until ctx ends, the lease expires or is
	// revoked, or the client closes; then the channel closes. Reconnects
	// are handled inside, as long as the lease has not expired.
	KeepAlive(ctx context.Context, id LeaseID) (<-chan *LeaseKeepAliveResponse, error)
	// KeepAliveOnce renews the lease once; rpctypes.ErrLeaseNotFound if it
	// is gone.
	KeepAliveOnce(ctx context.Context, id LeaseID) (*LeaseKeepAliveResponse, error)
	// Close stops every KeepAlive.
	Close() error
}

type lessor struct {
	c      *Client
	remote pb.LeaseClient
	keep   *workers // the KeepAlive loops
}

// NewLease returns the Lease API of c; Close it to stop its keep-alives.
func NewLease(c *Client) Lease { return newLessor(c) }

func newLessor(c *Client) *lessor {
	return &lessor{c: c, remote: pb.NewLeaseClient(c.conn), keep: newWorkers(c.ctx)}
}

func (l *lessor) Grant(ctx context.Context, ttl int64) (*LeaseGrantResponse, error) {
	r, err := l.remote.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: ttl})
	if err != nil {
		return nil, toErr(ctx, err)
	}
	return &LeaseGrantResponse{ResponseHeader: r.Header, ID: LeaseID(r.ID), TTL: r.TTL, Error: r.Error}, nil
}

func (l *lessor) Revoke(ctx context.Context, id LeaseID) (*LeaseRevokeResponse, error) {
	return call(ctx, l.remote.LeaseRevoke, &pb.LeaseRevokeRequest{ID: int64(id)})
}

func (l *lessor) TimeToLive(ctx context.Context, id LeaseID, opts ...LeaseOption) (*LeaseTimeToLiveResponse, error) {
	req := &pb.LeaseTimeToLiveRequest{ID: int64(id)}
	for _, o := range opts {
		o(req)
	}
	r, err := l.remote.LeaseTimeToLive(ctx, req)
	if err != nil {
		return nil, toErr(ctx, err)
	}
	return &LeaseTimeToLiveResponse{
		ResponseHeader: r.Header, ID: LeaseID(r.ID), TTL: r.TTL, GrantedTTL: r.GrantedTTL, Keys: r.Keys,
	}, nil
}

func (l *lessor) Leases(ctx context.Context) (*LeaseLeasesResponse, error) {
	r, err := l.remote.LeaseLeases(ctx, &pb.LeaseLeasesRequest{})
	if err != nil {
		return nil, toErr(ctx, err)
	}
	out := &LeaseLeasesResponse{ResponseHeader: r.Header}
	for _, s := range r.Leases {
		out.Leases = append(out.Leases, LeaseStatus{ID: LeaseID(s.ID)})
	}
	return out, nil
}

func (l *lessor) KeepAliveOnce(ctx context.Context, id LeaseID) (*LeaseKeepAliveResponse, error) {
	for attempt := 0; ; attempt++ {
		resp, err := l.keepAliveOnce(ctx, id)
		if err == nil || !l.c.shouldRetry(ctx, err, true, attempt) {
			return resp, toErr(ctx, err)
		}
		if l.c.wait(ctx, attempt) != nil {
			return nil, toErr(ctx, err)
		}
	}
}

func (l *lessor) keepAliveOnce(ctx context.Context, id LeaseID) (*LeaseKeepAliveResponse, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := l.remote.LeaseKeepAlive(sctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(id)}); err != nil {
		return nil, err
	}
	r, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	if r.TTL <= 0 {
		return nil, rpctypes.ErrLeaseNotFound
	}
	return &LeaseKeepAliveResponse{ResponseHeader: r.Header, ID: LeaseID(r.ID), TTL: r.TTL}, nil
}

func (l *lessor) KeepAlive(ctx context.Context, id LeaseID) (<-chan *LeaseKeepAliveResponse, error) {
	ch := make(chan *LeaseKeepAliveResponse, keepAliveBuffer)
	started := l.keep.start(ctx, func(ctx context.Context) {
		defer close(ch)
		ka := &keepAlive{l: l, id: id, ch: ch, deadline: time.Now().Add(firstKeepAliveWindow)}
		ka.run(ctx)
	})
	if !started {
		return nil, ErrClientClosed
	}
	return ch, nil
}

func (l *lessor) Close() error {
	l.keep.close()
	return nil
}

// keepAlive renews one lease over a LeaseKeepAlive stream, reopening the
// stream until the lease's deadline passes.
type keepAlive struct {
	l        *lessor
	id       LeaseID
	ch       chan *LeaseKeepAliveResponse
	deadline time.Time // the lease expires unless renewed before
}

func (ka *keepAlive) run(ctx context.Context) {
	for attempt := 0; ; attempt++ {
		err := ka.stream(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		if !isStreamBreak(err) {
			ka.l.c.lg.Warn("lease keep-alive stopped", zap.Int64("lease", int64(ka.id)), zap.Error(err))
			return
		}
		wctx, cancel := context.WithDeadline(ctx, ka.deadline)
		werr := ka.l.c.wait(wctx, min(attempt, 8))
		cancel()
		if werr != nil {
			return // expired or canceled
		}
	}
}

// stream keeps the lease alive over one stream. It returns nil when the
// lease is gone, expired or no longer wanted, an error when the stream
// broke.
func (ka *keepAlive) stream(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := ka.l.remote.LeaseKeepAlive(sctx)
	if err != nil {
		return err
	}
	recvc := make(chan *pb.LeaseKeepAliveResponse)
	errc := make(chan error, 1)
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	go func() {
		defer close(done)
		for {
			r, err := stream.Recv()
			if err != nil {
				errc <- err
				return
			}
			select {
			case recvc <- r:
			case <-sctx.Done():
				return
			}
		}
	}()
	return ka.serve(sctx, stream, recvc, errc)
}

func (ka *keepAlive) serve(ctx context.Context, stream pb.Lease_LeaseKeepAliveClient,
	recvc <-chan *pb.LeaseKeepAliveResponse, errc <-chan error) error {
	send := time.NewTimer(0)
	defer send.Stop()
	expire := time.NewTimer(time.Until(ka.deadline))
	defer expire.Stop()
	for {
		select {
		case <-send.C:
			if err := stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(ka.id)}); err != nil {
				return err
			}
			send.Reset(time.Second) // resend if no answer comes
		case r := <-recvc:
			if r.TTL <= 0 {
				return nil // revoked or expired
			}
			ttl := time.Duration(r.TTL) * time.Second
			ka.deadline = time.Now().Add(ttl)
			expire.Reset(ttl)
			ka.deliver(r)
			send.Reset(ttl / 3)
		case err := <-errc:
			return err
		case <-expire.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// isStreamBreak reports whether a stream ended because of its connection
// (worth reopening) rather than because the server refused it.
func isStreamBreak(err error) bool {
	return errors.Is(err, io.EOF) || isUnavailable(err)
}

func (ka *keepAlive) deliver(r *pb.LeaseKeepAliveResponse) {
	select {
	case ka.ch <- &LeaseKeepAliveResponse{ResponseHeader: r.Header, ID: LeaseID(r.ID), TTL: r.TTL}:
	default:
	}
}
