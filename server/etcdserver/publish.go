package etcdserver

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/storage/backend"
)

var keyClusterVersion = []byte("clusterVersion")

// ReadyNotify is closed once the member has published its name and client
// URLs through raft, i.e. once it can commit and apply: it then serves.
func (s *Server) ReadyNotify() <-chan struct{} { return s.readyc }

// publish proposes this member's attributes until one proposal is applied,
// as etcd does at start; the cluster version is the version monitor's.
func (s *Server) publish() {
	attrs := &membershippb.ClusterMemberAttrSetRequest{
		Member_ID:        s.id,
		MemberAttributes: &membershippb.Attributes{Name: s.cfg.Name, ClientUrls: s.cfg.ClientURLs},
	}
	for {
		// Take the change channel before looking, so an election between the
		// two cannot be missed.
		changed := s.node.LeaderChanged()
		if s.Leader() == 0 {
			// Without a leader raft drops proposals; wait for one.
			select {
			case <-changed:
			case <-s.stopc:
				return
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout())
		_, err := s.propose(ctx, &pb.InternalRaftRequest{ClusterMemberAttrSet: attrs})
		cancel()
		if err == nil {
			break
		}
		s.lg.Warn("failed to publish local member to cluster through raft", zap.Error(err))
		select {
		case <-time.After(500 * time.Millisecond):
		case <-s.stopc:
			return
		}
	}
	s.lg.Info("published local member to cluster through raft", zap.String("local-member-id", idHex(s.id)))
	close(s.readyc)
}

func (s *Server) storedClusterVersion() string {
	if !s.rlockStores() {
		return ""
	}
	defer s.storeMu.RUnlock()
	tx := s.be.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	_, vals := tx.UnsafeRange(backend.BucketCluster, keyClusterVersion, nil, 0)
	if len(vals) == 0 {
		return ""
	}
	return string(vals[0])
}

// applyClusterRequest applies the membership requests the member itself
// proposes; it reports whether r was one of them.
func (s *Server) applyClusterRequest(r *pb.InternalRaftRequest) bool {
	switch {
	case r.GetClusterMemberAttrSet() != nil:
		s.applyMemberAttrs(r.GetClusterMemberAttrSet())
	case r.GetClusterVersionSet() != nil:
		s.applyClusterVersion(r.GetClusterVersionSet().GetVer())
	case r.GetDowngradeInfoSet() != nil:
		s.applyDowngradeInfo(r.GetDowngradeInfoSet())
	default:
		return false
	}
	return true
}

func (s *Server) applyMemberAttrs(req *membershippb.ClusterMemberAttrSetRequest) {
	tx := s.be.BatchTx()
	tx.Lock()
	defer tx.Unlock()
	members, err := membership.Load(tx)
	if err != nil {
		s.lg.Error("cannot load members", zap.Error(err))
		return
	}
	for _, m := range members {
		if m.ID == req.GetMember_ID() {
			m.Name = req.GetMemberAttributes().GetName()
			m.ClientURLs = req.GetMemberAttributes().GetClientUrls()
			if err := membership.Save(tx, m); err != nil {
				s.lg.Error("cannot save member", zap.Error(err))
			}
			return
		}
	}
}
