package v3rpc

import (
	"context"
	"sort"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/server/membership"
)

// ClusterServer is what the Cluster service needs from a member
// (etcdserver.MembershipAdmin); Config.Cluster gets the service registered.
type ClusterServer interface {
	MemberList(ctx context.Context, linearizable bool) ([]*membership.Member, error)
	MemberAdd(ctx context.Context, peerURLs []string, isLearner bool) (*membership.Member, []*membership.Member, error)
	MemberRemove(ctx context.Context, id uint64) ([]*membership.Member, error)
	MemberUpdate(ctx context.Context, id uint64, peerURLs []string) ([]*membership.Member, error)
	MemberPromote(ctx context.Context, id uint64) ([]*membership.Member, error)
}

type clusterServer struct {
	pb.UnimplementedClusterServer
	s  Server
	cs ClusterServer
}

func (c *clusterServer) MemberAdd(ctx context.Context, r *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	m, members, err := c.cs.MemberAdd(ctx, r.GetPeerURLs(), r.GetIsLearner())
	if err != nil {
		return nil, err
	}
	return &pb.MemberAddResponse{
		Header:  clusterHeader(c.s),
		Member:  &pb.Member{ID: m.ID, PeerURLs: m.PeerURLs, IsLearner: m.IsLearner},
		Members: membersToPB(members),
	}, nil
}

func (c *clusterServer) MemberRemove(ctx context.Context, r *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	members, err := c.cs.MemberRemove(ctx, r.GetID())
	if err != nil {
		return nil, err
	}
	return &pb.MemberRemoveResponse{Header: clusterHeader(c.s), Members: membersToPB(members)}, nil
}

func (c *clusterServer) MemberUpdate(ctx context.Context, r *pb.MemberUpdateRequest) (*pb.MemberUpdateResponse, error) {
	members, err := c.cs.MemberUpdate(ctx, r.GetID(), r.GetPeerURLs())
	if err != nil {
		return nil, err
	}
	return &pb.MemberUpdateResponse{Header: clusterHeader(c.s), Members: membersToPB(members)}, nil
}

func (c *clusterServer) MemberList(ctx context.Context, r *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	members, err := c.cs.MemberList(ctx, r.GetLinearizable())
	if err != nil {
		return nil, err
	}
	return &pb.MemberListResponse{Header: clusterHeader(c.s), Members: membersToPB(members)}, nil
}

func (c *clusterServer) MemberPromote(ctx context.Context, r *pb.MemberPromoteRequest) (*pb.MemberPromoteResponse, error) {
	members, err := c.cs.MemberPromote(ctx, r.GetID())
	if err != nil {
		return nil, err
	}
	return &pb.MemberPromoteResponse{Header: clusterHeader(c.s), Members: membersToPB(members)}, nil
}

// clusterHeader is the header of a Cluster service answer: etcd's carries
// the cluster and member IDs and the raft term but no revision, since
// membership is not part of the key space (a JSON gateway client sees the
// field missing).
func clusterHeader(s Server) *pb.ResponseHeader {
	h := completeHeader(s, nil)
	h.Revision = 0
	return h
}

// membersToPB converts members to the API's messages, ordered by ID.
func membersToPB(members []*membership.Member) []*pb.Member {
	out := make([]*pb.Member, len(members))
	for i, m := range members {
		out[i] = &pb.Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
