// Package v3client owns the member's client of itself and the gRPC services
// built on it: etcd's Lock and Election services, which run cairn's
// client/concurrency recipes against the member's own gRPC server.
//
// Importing the package installs the services into server/embed (embed
// cannot import them: client's tests start members with embed). The client
// reaches the gRPC server over an in-memory connection, so every inner call
// passes the same interceptors (auth, learner, limits, metrics) as a remote
// client's. The caller's auth token and require-leader flag travel with the
// inner calls, so the store checks the caller's permissions, not the
// member's.
package v3client

import (
	"context"
	"net"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/cairnkv/cairn/api/v3electionpb"
	"github.com/cairnkv/cairn/api/v3lockpb"
	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/server/v3election"
	"github.com/cairnkv/cairn/server/v3lock"
)

// selfEndpoint names the in-memory connection; the dialer ignores it.
const selfEndpoint = "cairn-self:0"

// forwardedMetadata are the caller's request metadata the inner calls
// carry: etcd's auth token and require-leader flag.
var forwardedMetadata = []string{rpctypes.TokenFieldNameGRPC, rpctypes.MetadataRequireLeaderKey}

// Install registers the Lock and Election services on gs, served by a
// client that reaches gs through dial. The returned function closes the
// client; call it after gs has stopped.
func Install(gs *grpc.Server, dial func(context.Context, string) (net.Conn, error)) (func(), error) {
	c, err := client.New(client.Config{
		Endpoints: []string{selfEndpoint},
		DialOptions: []grpc.DialOption{
			grpc.WithContextDialer(dial),
			grpc.WithChainUnaryInterceptor(forwardUnary),
			grpc.WithChainStreamInterceptor(forwardStream),
		},
	})
	if err != nil {
		return nil, err
	}
	v3lockpb.RegisterLockServer(gs, v3lock.NewLockServer(c))
	v3electionpb.RegisterElectionServer(gs, v3election.NewElectionServer(c))
	return func() { c.Close() }, nil
}

// withCallerMetadata copies the forwarded metadata of the caller's request
// (incoming on ctx) to the inner call's outgoing metadata.
func withCallerMetadata(ctx context.Context) context.Context {
	in, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return ctx
	}
	var kv []string
	for _, key := range forwardedMetadata {
		for _, v := range in.Get(key) {
			kv = append(kv, key, v)
		}
	}
	if len(kv) == 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

func forwardUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(withCallerMetadata(ctx), method, req, reply, cc, opts...)
}

func forwardStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return streamer(withCallerMetadata(ctx), desc, cc, method, opts...)
}
