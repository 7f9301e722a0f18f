package etcdserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/peer"
)

// The member as the peer transport sees it (peer.Raft and peer.SnapshotStore).

// Process steps a message from a peer into raft.
func (s *Server) Process(ctx context.Context, m *raftpb.Message) error {
	return s.node.Step(ctx, m)
}

// IsIDRemoved reports whether id was removed from the cluster.
func (s *Server) IsIDRemoved(id uint64) bool {
	if !s.rlockStores() {
		return false
	}
	defer s.storeMu.RUnlock()
	tx := s.be.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	removed, err := membership.LoadRemoved(tx)
	if err != nil {
		return false
	}
	for _, r := range removed {
		if r == id {
			return true
		}
	}
	return false
}

// ReportUnreachable tells raft a peer could not be reached.
func (s *Server) ReportUnreachable(id uint64) { s.node.ReportUnreachable(id) }

// ReportSnapshot tells raft how sending a snapshot went.
func (s *Server) ReportSnapshot(id uint64, status raft.SnapshotStatus) {
	s.node.ReportSnapshot(id, status)
}

// newTransport builds the peer transport of this member.
func (s *Server) newTransport() (*peer.Transport, error) {
	t := peer.New(peer.Config{
		ID: s.id, ClusterID: s.clusterID, URLs: s.cfg.PeerURLs,
		Raft: s, Snapshots: s, Logger: s.lg,
		ServerVersion: serverVersion, MinClusterVersion: "3.0.0",
		TLS: s.cfg.PeerTLS, ConnReadTimeout: s.cfg.RaftReadTimeout, ConnWriteTimeout: s.cfg.RaftWriteTimeout,
		LocalAddr: s.cfg.PeerLocalAddr,
	})
	if err := t.Start(); err != nil {
		return nil, err
	}
	return t, nil
}

// connectPeers adds every other known member to the transport.
func (s *Server) connectPeers(members []*membership.Member) {
	for _, m := range members {
		if m.ID != s.id {
			s.transport.AddPeer(m.ID, m.PeerURLs)
		}
	}
}

// members returns the members the backend knows.
func (s *Server) members() []*membership.Member {
	if !s.rlockStores() {
		return nil
	}
	defer s.storeMu.RUnlock()
	tx := s.be.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	ms, err := membership.Load(tx)
	if err != nil {
		s.lg.Warn("cannot load members", zap.Error(err))
	}
	return ms
}

// PeerHandler serves the peer URLs: raft traffic, /members, /members/hashkv
// and /version.
func (s *Server) PeerHandler() http.Handler {
	mux := http.NewServeMux()
	raftHandler := s.transport.Handler()
	mux.Handle("/raft", raftHandler)
	mux.Handle("/raft/", raftHandler)
	mux.HandleFunc("/members", s.serveMembers)
	mux.Handle(peerHashKVPath, hashKVHandler{clusterID: s.clusterID, hash: s.hashByRev, lg: s.lg})
	mux.HandleFunc(promotePath, s.memberAdmin.servePromote)
	mux.HandleFunc(learnerSettingsPath, s.memberAdmin.serveLearnerSettings)
	mux.HandleFunc(leasesPath, s.leases.serveLeaseRenew)
	mux.HandleFunc(leasesInternalPath, s.leases.serveLeaseInternal)
	mux.HandleFunc("/version", s.versions.serveVersion)
	return mux
}

// serveMembers answers GET /members with the member list, as etcd's peer
// handler does; a joining member learns the cluster from it.
func (s *Server) serveMembers(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Etcd-Cluster-ID", strconv.FormatUint(s.clusterID, 16))
	members := s.members()
	if members == nil {
		members = []*membership.Member{}
	}
	if err := json.NewEncoder(w).Encode(members); err != nil {
		s.lg.Warn("failed to encode members response", zap.Error(err))
	}
}
