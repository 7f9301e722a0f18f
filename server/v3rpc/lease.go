package v3rpc

import (
	"context"
	"errors"
	"io"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/server/errs"
)

// LeaseServer is what the Lease service needs from a member
// (etcdserver.LeaseService); Config.Lease gets the service registered.
type LeaseServer interface {
	LeaseGrant(ctx context.Context, r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error)
	LeaseRevoke(ctx context.Context, r *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error)
	// LeaseRenew renews a lease and returns its TTL (errs.ErrLeaseNotFound
	// for an unknown lease).
	LeaseRenew(ctx context.Context, id int64) (int64, error)
	LeaseTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error)
	LeaseLeases(ctx context.Context) (*pb.LeaseLeasesResponse, error)
}

type leaseServer struct {
	pb.UnimplementedLeaseServer
	s  Server
	ls LeaseServer
}

func (l *leaseServer) LeaseGrant(ctx context.Context, r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	return withHeader(l.s, l.ls.LeaseGrant, ctx, r)
}

func (l *leaseServer) LeaseRevoke(ctx context.Context, r *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	return withHeader(l.s, l.ls.LeaseRevoke, ctx, r)
}

func (l *leaseServer) LeaseTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	return withHeader(l.s, l.ls.LeaseTimeToLive, ctx, r)
}

func (l *leaseServer) LeaseLeases(ctx context.Context, _ *pb.LeaseLeasesRequest) (*pb.LeaseLeasesResponse, error) {
	resp, err := l.ls.LeaseLeases(ctx)
	return answered(l.s, resp, err)
}

// LeaseKeepAlive answers every keepalive on the stream with the lease's
// TTL; an unknown lease answers TTL 0, as etcd does. The stream ends when
// the client closes it or a renew fails for another reason.
func (l *leaseServer) LeaseKeepAlive(stream grpc.BidiStreamingServer[pb.LeaseKeepAliveRequest, pb.LeaseKeepAliveResponse]) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		ttl, err := l.ls.LeaseRenew(stream.Context(), req.ID)
		switch {
		case errors.Is(err, errs.ErrLeaseNotFound):
			ttl = 0
		case err != nil:
			return err
		}
		resp := &pb.LeaseKeepAliveResponse{Header: completeHeader(l.s, nil), ID: req.ID, TTL: ttl}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}
