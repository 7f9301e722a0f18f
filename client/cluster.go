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
	r, err := cl.remote.MemberList(ctx, &pb.MemberListRequest{Linearizable: !op.serializable})
	return r, toErr(ctx, err)
}

func (cl *cluster) MemberAdd(ctx context.Context, peerAddrs []string) (*MemberAddResponse, error) {
	r, err := cl.remote.MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: peerAddrs})
	return r, toErr(ctx, err)
}

func (cl *cluster) MemberAddAsLearner(ctx context.Context, peerAddrs []string) (*MemberAddResponse, error) {
	r, err := cl.remote.MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: peerAddrs, IsLearner: true})
	return r, toErr(ctx, err)
}

func (cl *cluster) MemberRemove(ctx context.Context, id uint64) (*MemberRemoveResponse, error) {
	r, err := cl.remote.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: id})
	return r, toErr(ctx, err)
}

func (cl *cluster) MemberUpdate(ctx context.Context, id uint64, peerAddrs []string) (*MemberUpdateResponse, error) {
	r, err := cl.remote.MemberUpdate(ctx, &pb.MemberUpdateRequest{ID: id, PeerURLs: peerAddrs})
	return r, toErr(ctx, err)
}

func (cl *cluster) MemberPromote(ctx context.Context, id uint64) (*MemberPromoteResponse, error) {
	r, err := cl.remote.MemberPromote(ctx, &pb.MemberPromoteRequest{ID: id})
	return r, toErr(ctx, err)
}
