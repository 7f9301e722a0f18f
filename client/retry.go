package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/cairnkv/cairn/pkg/wait"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// repeatableMethods may be sent again after an Unavailable error: a second
// execution cannot change what the first one did. Everything else counts as
// a mutation. Read-only Txns opt in per call (see repeatableCall).
var repeatableMethods = map[string]bool{
	"/etcdserverpb.KV/Range":              true,
	"/etcdserverpb.KV/RangeStream":        true,
	"/etcdserverpb.Watch/Watch":           true,
	"/etcdserverpb.Lease/LeaseKeepAlive":  true,
	"/etcdserverpb.Lease/LeaseTimeToLive": true,
	"/etcdserverpb.Lease/LeaseLeases":     true,
	"/etcdserverpb.Cluster/MemberList":    true,
	"/etcdserverpb.Maintenance/Status":    true,
	"/etcdserverpb.Maintenance/Alarm":     true,
	"/etcdserverpb.Maintenance/Hash":      true,
	"/etcdserverpb.Maintenance/HashKV":    true,
	"/etcdserverpb.Maintenance/Snapshot":  true,
	"/etcdserverpb.Auth/Authenticate":     true,
	"/etcdserverpb.Auth/AuthStatus":       true,
	"/etcdserverpb.Auth/UserGet":          true,
	"/etcdserverpb.Auth/UserList":         true,
	"/etcdserverpb.Auth/RoleGet":          true,
	"/etcdserverpb.Auth/RoleList":         true,
}

// repeatableCall marks one call as repeatable (a read-only Txn).
type repeatableCall struct{ grpc.EmptyCallOption }

func isRepeatable(method string, opts []grpc.CallOption) bool {
	for _, o := range opts {
		if _, ok := o.(repeatableCall); ok {
			return true
		}
	}
	return repeatableMethods[method]
}

// unaryRetry retries a failed unary call while shouldRetry allows it, with
// backoff between attempts.
func (c *Client) unaryRetry(ctx context.Context, method string, req, reply any,
	cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	repeatable := isRepeatable(method, opts)
	ctx = c.requireLeaderForReads(ctx, method, repeatable)
	reauthenticated := false
	for attempt := 0; ; attempt++ {
		token := c.tokens.current()
		err := invoker(attachToken(ctx, method, token), method, req, reply, cc, opts...)
		if err == nil {
			return nil
		}
		// The server refused the token before acting on the request, so
		// even a mutation may go again, once, with a new token.
		if !reauthenticated && c.tokens.refreshable(method, err) {
			reauthenticated = true
			if rerr := c.tokens.refresh(ctx, token); rerr != nil {
				return rerr
			}
			c.lg.Debug("retrying request with a new auth token", zap.String("method", method))
			attempt--
			continue
		}
		if !c.shouldRetry(ctx, err, repeatable, attempt) {
			return err
		}
		c.lg.Debug("retrying request", zap.String("method", method), zap.Int("attempt", attempt+1), zap.Error(err))
		if c.wait(ctx, attempt) != nil {
			return err
		}
	}
}

// streamRetry retries opening a stream, with the current auth token.
// Opening sends nothing the server acts on, so it follows the method's
// policy like a unary call; failures of an open stream are left to its
// owner (Watch and KeepAlive reopen it; Watch also renews a rejected
// token), except that a server-streaming call whose token is refused in
// the first answer is made again with a new one (reauthStream).
func (c *Client) streamRetry(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn,
	method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	repeatable := isRepeatable(method, opts)
	ctx = c.requireLeaderForReads(ctx, method, repeatable)
	for attempt := 0; ; attempt++ {
		token := c.tokens.current()
		s, err := streamer(attachToken(ctx, method, token), desc, cc, method, opts...)
		if err == nil && desc.ServerStreams && !desc.ClientStreams {
			open := func(ctx context.Context) (grpc.ClientStream, error) { return streamer(ctx, desc, cc, method, opts...) }
			return &reauthStream{ClientStream: s, ctx: ctx, c: c, method: method, token: token, open: open}, nil
		}
		if err == nil || !c.shouldRetry(ctx, err, repeatable, attempt) {
			return s, err
		}
		c.lg.Debug("retrying stream", zap.String("method", method), zap.Int("attempt", attempt+1), zap.Error(err))
		if c.wait(ctx, attempt) != nil {
			return nil, err
		}
	}
}

// requireLeaderForReads makes a health-checking client's reads fail fast
// with "etcdserver: no leader" on a member that lost its leader, instead of
// waiting out the server's request timeout there: the health check only
// steers new requests off such a member, and a read is retried elsewhere.
func (c *Client) requireLeaderForReads(ctx context.Context, method string, repeatable bool) context.Context {
	if c.cfg.HealthCheckInterval <= 0 || !repeatable || !readMethods[method] {
		return ctx
	}
	return WithRequireLeader(ctx)
}

// readMethods read keys; a Txn only when it is a read-only (repeatable) one.
var readMethods = map[string]bool{
	"/etcdserverpb.KV/Range":       true,
	"/etcdserverpb.KV/RangeStream": true,
	"/etcdserverpb.KV/Txn":         true,
}

func (c *Client) shouldRetry(ctx context.Context, err error, repeatable bool, attempt int) bool {
	if ctx.Err() != nil || attempt >= c.cfg.MaxRetries {
		return false
	}
	if rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCNotSupportedForLearner) {
		// Another endpoint may be a voter.
		return len(c.Endpoints()) > 1
	}
	if repeatable {
		return isUnavailable(err)
	}
	return neverSent(err)
}

func isUnavailable(err error) bool { return status.Code(err) == codes.Unavailable }

// neverSent reports whether a failed call provably did not reach a server:
// gRPC could not pick a connection because dialing failed. Errors from a
// connection that was up ("transport is closing", "error reading from
// server") or from the server ("etcdserver: request timed out") may follow
// an executed request and are not safe to repeat for a mutation.
func neverSent(err error) bool {
	if !isUnavailable(err) {
		return false
	}
	msg := status.Convert(err).Message()
	for _, s := range []string{
		"Error while dialing", "connection refused",
		"there is no connection available", "there is no address available",
		"produced zero addresses",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// backoff is the wait before retry number attempt+1: doubling from
// BackoffWaitBetween up to BackoffMax, with 10% jitter.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.BackoffWaitBetween
	for i := 0; i < attempt && d < c.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, c.cfg.BackoffMax)
	jitter := time.Duration(rand.Int64N(int64(d)/5+1)) - d/10
	return d + jitter
}

// wait sleeps for the attempt's backoff or until ctx ends.
func (c *Client) wait(ctx context.Context, attempt int) error {
	if !wait.Sleep(ctx, c.backoff(attempt)) {
		return ctx.Err()
	}
	return nil
}

// toErr turns a gRPC error into the rpctypes error the server meant, and a
// cancellation caused by ctx into ctx.Err().
func toErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	err = rpctypes.Error(err)
	var etcdErr rpctypes.EtcdError
	if errors.As(err, &etcdErr) {
		return err
	}
	switch status.Code(err) {
	case codes.Canceled, codes.DeadlineExceeded:
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return err
}

// call makes one unary call of rpc with req and maps its error as toErr
// does: what every API method that needs no more than that returns.
func call[Req, Resp any](ctx context.Context, rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) (Resp, error) {
	r, err := rpc(ctx, req)
	return r, toErr(ctx, err)
}

// WithRequireLeader makes requests under ctx fail with rpctypes.ErrNoLeader
// (and watches end) when the serving member has no leader, instead of
// waiting on a partitioned member.
func WithRequireLeader(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, rpctypes.MetadataRequireLeaderKey, rpctypes.MetadataHasLeader)
}
