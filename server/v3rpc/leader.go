package v3rpc

import (
	"context"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// LeaderReporter is implemented by a member that knows its leader; with it
// the server honours the clients' "require leader" request metadata.
type LeaderReporter interface {
	// Leader is the current leader's member ID, 0 when there is none.
	Leader() uint64
}

// requiresLeader reports whether the client asked, through etcd's
// "hasleader" metadata, to fail fast when the member has no leader.
// It looks up the one key (case-insensitively, as metadata keys are) rather
// than copying all of the request's metadata, which every request would pay.
func requiresLeader(ctx context.Context) bool {
	vals := metadata.ValueFromIncomingContext(ctx, rpctypes.MetadataRequireLeaderKey)
	return len(vals) > 0 && vals[0] == rpctypes.MetadataHasLeader
}

// leaderUnaryCheck answers "etcdserver: no leader" to a request that
// requires a leader while the member has none, as etcd does.
func leaderUnaryCheck(lr LeaderReporter) unaryCheck {
	return func(ctx context.Context, _ any) error {
		if requiresLeader(ctx) && lr.Leader() == 0 {
			return rpctypes.ErrGRPCNoLeader
		}
		return nil
	}
}

// maxNoLeaderChecks is how many election timeouts in a row a stream that
// requires a leader tolerates without one before it is ended (etcd's
// value: reconnecting a stream costs more than refusing a new request).
const maxNoLeaderChecks = 3

// leaderStreamInterceptor is leaderUnaryCheck for streams; an open
// stream that requires a leader is also ended with "etcdserver: no leader"
// once the member has had none for maxNoLeaderChecks election timeouts.
func leaderStreamInterceptor(lr LeaderReporter, electionTimeout time.Duration) grpc.StreamServerInterceptor {
	if electionTimeout <= 0 {
		electionTimeout = time.Second
	}
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if !requiresLeader(ss.Context()) {
			return handler(srv, ss)
		}
		if lr.Leader() == 0 {
			return rpctypes.ErrGRPCNoLeader
		}
		ctx, cancel := context.WithCancel(ss.Context())
		defer cancel()
		lost := make(chan struct{})
		go watchLeader(ctx, lr, electionTimeout, lost, cancel)
		err := handler(srv, &streamWithContext{ServerStream: ss, ctx: ctx})
		select {
		case <-lost:
			return rpctypes.ErrGRPCNoLeader
		default:
			return err
		}
	}
}

// watchLeader cancels a stream once the member has had no leader for
// maxNoLeaderChecks checks in a row, closing lost first.
func watchLeader(ctx context.Context, lr LeaderReporter, every time.Duration, lost chan<- struct{}, cancel func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	misses := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if lr.Leader() != 0 {
			misses = 0
			continue
		}
		if misses++; misses >= maxNoLeaderChecks {
			close(lost)
			cancel()
			return
		}
	}
}

// streamWithContext replaces a stream's context.
type streamWithContext struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *streamWithContext) Context() context.Context { return s.ctx }
