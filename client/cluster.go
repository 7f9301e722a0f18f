package client

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// Cluster manages the cluster's membership.
type Cluster interface {
	// MemberList lists the members; linearizable unless WithSerializable.
	MemberList(ctx context.Context, opts ...OpOption) (*MemberListResponse, error)
	MemberAdd(ctx context.Context, peerAddrs []string) (*MemberAddResponse, error)
	MemberAddAsLearner(ctx context.Context, peerAddrs []string) (*MemberAddResponse, error)
	MemberRemove(ctx context.Context, id uint64) (*MemberRemoveResponse, error)
	MemberUpdate(ctx context.Context, id uint64, peerAddrs []string) (*MemberUpdateResponse, error)
	MemberPromote(ctx context.Context, id uint64) (*MemberPromoteResponse, error)
}

type cluster struct{ remote pb.ClusterClient }

// NewCluster returns the Cluster API of c.
func NewCluster(c *Client) Cluster { return newCluster(c) }

func newCluster(c *Client) *cluster { return &cluster{remote: pb.NewClusterClient(c.conn)} }

func (cl *cluster) MemberList(ctx context.Context, opts ...OpOption) (*MemberListResponse, error) {
	op := newOp(tRange, "", opts)
	return call(ctx, cl.remote.MemberList, &pb.MemberListRequest{Linearizable: !op.serializable})
}

func (cl *cluster) MemberAdd(ctx context.Context, peerAddrs []string) (*MemberAddResponse, error) {
	return call(ctx, cl.remote.MemberAdd, &pb.MemberAddRequest{PeerURLs: peerAddrs})
}

func (cl *cluster) MemberAddAsLearner(ctx context.Context, peerAddrs []string) (*MemberAddResponse, error) {
	return call(ctx, cl.remote.MemberAdd, &pb.MemberAddRequest{PeerURLs: peerAddrs, IsLearner: true})
}

func (cl *cluster) MemberRemove(ctx context.Context, id uint64) (*MemberRemoveResponse, error) {
	return call(ctx, cl.remote.MemberRemove, &pb.MemberRemoveRequest{ID: id})
}

func (cl *cluster) MemberUpdate(ctx context.Context, id uint64, peerAddrs []string) (*MemberUpdateResponse, error) {
	return call(ctx, cl.remote.MemberUpdate, &pb.MemberUpdateRequest{ID: id, PeerURLs: peerAddrs})
}

func (cl *cluster) MemberPromote(ctx context.Context, id uint64) (*MemberPromoteResponse, error) {
	return call(ctx, cl.remote.MemberPromote, &pb.MemberPromoteRequest{ID: id})
}
