package v3rpc

import (
	"context"

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
func requiresLeader(ctx context.Context) bool {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return false
	}
	vals := md.Get(rpctypes.MetadataRequireLeaderKey)
	return len(vals) > 0 && vals[0] == rpctypes.MetadataHasLeader
}

// leaderUnaryInterceptor answers "etcdserver: no leader" to a request that
// requires a leader while the member has none, as etcd does.
func leaderUnaryInterceptor(lr LeaderReporter) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if requiresLeader(ctx) && lr.Leader() == 0 {
			return nil, rpctypes.ErrGRPCNoLeader
		}
		return handler(ctx, req)
	}
}

// leaderStreamInterceptor is leaderUnaryInterceptor for streams.
func leaderStreamInterceptor(lr LeaderReporter) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if requiresLeader(ss.Context()) && lr.Leader() == 0 {
			return rpctypes.ErrGRPCNoLeader
		}
		return handler(srv, ss)
	}
}
