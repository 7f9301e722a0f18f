// Hand-written gRPC bindings of the Election service in v3election.proto,
// in the shape protoc-gen-go-grpc gives them. Method names are etcd's, so
// etcd's clients reach cairn's server and the reverse.

package v3electionpb

import (
	"context"

	"google.golang.org/grpc"
)

// Full method names of the Election service.
const (
	Election_Campaign_FullMethodName = "/v3electionpb.Election/Campaign"
	Election_Proclaim_FullMethodName = "/v3electionpb.Election/Proclaim"
	Election_Leader_FullMethodName   = "/v3electionpb.Election/Leader"
	Election_Observe_FullMethodName  = "/v3electionpb.Election/Observe"
	Election_Resign_FullMethodName   = "/v3electionpb.Election/Resign"
)

// ElectionClient calls the Election service.
type ElectionClient interface {
	Campaign(ctx context.Context, in *CampaignRequest, opts ...grpc.CallOption) (*CampaignResponse, error)
	Proclaim(ctx context.Context, in *ProclaimRequest, opts ...grpc.CallOption) (*ProclaimResponse, error)
	Leader(ctx context.Context, in *LeaderRequest, opts ...grpc.CallOption) (*LeaderResponse, error)
	Observe(ctx context.Context, in *LeaderRequest, opts ...grpc.CallOption) (Election_ObserveClient, error)
	Resign(ctx context.Context, in *ResignRequest, opts ...grpc.CallOption) (*ResignResponse, error)
}

type electionClient struct{ cc grpc.ClientConnInterface }

// NewElectionClient returns an ElectionClient over cc.
func NewElectionClient(cc grpc.ClientConnInterface) ElectionClient { return &electionClient{cc} }

// invoke makes one unary call of the Election service.
func invoke[Resp any](ctx context.Context, cc grpc.ClientConnInterface, method string, in any, opts []grpc.CallOption) (*Resp, error) {
	out := new(Resp)
	if err := cc.Invoke(ctx, method, in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *electionClient) Campaign(ctx context.Context, in *CampaignRequest, opts ...grpc.CallOption) (*CampaignResponse, error) {
	return invoke[CampaignResponse](ctx, c.cc, Election_Campaign_FullMethodName, in, opts)
}

func (c *electionClient) Proclaim(ctx context.Context, in *ProclaimRequest, opts ...grpc.CallOption) (*ProclaimResponse, error) {
	return invoke[ProclaimResponse](ctx, c.cc, Election_Proclaim_FullMethodName, in, opts)
}

func (c *electionClient) Leader(ctx context.Context, in *LeaderRequest, opts ...grpc.CallOption) (*LeaderResponse, error) {
	return invoke[LeaderResponse](ctx, c.cc, Election_Leader_FullMethodName, in, opts)
}

func (c *electionClient) Resign(ctx context.Context, in *ResignRequest, opts ...grpc.CallOption) (*ResignResponse, error) {
	return invoke[ResignResponse](ctx, c.cc, Election_Resign_FullMethodName, in, opts)
}

func (c *electionClient) Observe(ctx context.Context, in *LeaderRequest, opts ...grpc.CallOption) (Election_ObserveClient, error) {
	stream, err := c.cc.NewStream(ctx, &Election_ServiceDesc.Streams[0], Election_Observe_FullMethodName, opts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[LeaderRequest, LeaderResponse]{ClientStream: stream}
	if err := x.ClientStream.SendMsg(in); err != nil {
		return nil, err
	}
	if err := x.ClientStream.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}

// Election_ObserveClient is the client side of an Observe stream.
type Election_ObserveClient = grpc.ServerStreamingClient[LeaderResponse]

// Election_ObserveServer is the server side of an Observe stream.
type Election_ObserveServer = grpc.ServerStreamingServer[LeaderResponse]

// ElectionServer serves the Election service.
type ElectionServer interface {
	Campaign(context.Context, *CampaignRequest) (*CampaignResponse, error)
	Proclaim(context.Context, *ProclaimRequest) (*ProclaimResponse, error)
	Leader(context.Context, *LeaderRequest) (*LeaderResponse, error)
	Observe(*LeaderRequest, Election_ObserveServer) error
	Resign(context.Context, *ResignRequest) (*ResignResponse, error)
}

// RegisterElectionServer registers srv on s.
func RegisterElectionServer(s grpc.ServiceRegistrar, srv ElectionServer) {
	s.RegisterService(&Election_ServiceDesc, srv)
}

// unaryHandler adapts one unary method of ElectionServer to grpc.MethodDesc.
func unaryHandler[Req any](method string, call func(ElectionServer, context.Context, *Req) (any, error)) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := new(Req)
		if err := dec(in); err != nil {
			return nil, err
		}
		if interceptor == nil {
			return call(srv.(ElectionServer), ctx, in)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: method}
		handler := func(ctx context.Context, req any) (any, error) {
			return call(srv.(ElectionServer), ctx, req.(*Req))
		}
		return interceptor(ctx, in, info, handler)
	}
}

func observeHandler(srv any, stream grpc.ServerStream) error {
	in := new(LeaderRequest)
	if err := stream.RecvMsg(in); err != nil {
		return err
	}
	return srv.(ElectionServer).Observe(in, &grpc.GenericServerStream[LeaderRequest, LeaderResponse]{ServerStream: stream})
}

// Election_ServiceDesc describes the Election service to grpc.Server.
var Election_ServiceDesc = grpc.ServiceDesc{
	ServiceName: "v3electionpb.Election",
	HandlerType: (*ElectionServer)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Campaign", Handler: unaryHandler(Election_Campaign_FullMethodName,
			func(s ElectionServer, ctx context.Context, r *CampaignRequest) (any, error) {
				return s.Campaign(ctx, r)
			})},
		{MethodName: "Proclaim", Handler: unaryHandler(Election_Proclaim_FullMethodName,
			func(s ElectionServer, ctx context.Context, r *ProclaimRequest) (any, error) {
				return s.Proclaim(ctx, r)
			})},
		{MethodName: "Leader", Handler: unaryHandler(Election_Leader_FullMethodName,
			func(s ElectionServer, ctx context.Context, r *LeaderRequest) (any, error) { return s.Leader(ctx, r) })},
		{MethodName: "Resign", Handler: unaryHandler(Election_Resign_FullMethodName,
			func(s ElectionServer, ctx context.Context, r *ResignRequest) (any, error) { return s.Resign(ctx, r) })},
	},
	Streams: []grpc.StreamDesc{
		{StreamName: "Observe", Handler: observeHandler, ServerStreams: true},
	},
	Metadata: "v3election.proto",
}
