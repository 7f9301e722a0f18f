package etcdserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/peer"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// raftNode is the raft node's part in the peer protocol (*raftnode.Node).
type raftNode interface {
	Step(ctx context.Context, m *raftpb.Message) error
	ReportUnreachable(id uint64)
	ReportSnapshot(id uint64, status raft.SnapshotStatus)
}

// snapshotDBs stores the dbs that come with snapshots from the leader
// (*snap.Snapshotter).
type snapshotDBs interface {
	SaveDBFrom(r io.Reader, index uint64) (int64, error)
}

// raftPeer is the member as the peer transport sees it (peer.Raft and
// peer.SnapshotStore): it steps messages into raft, refuses removed
// members, and sends and receives the dbs of snapshots.
type raftPeer struct {
	node    raftNode
	removed func(id uint64) bool // the members bucket's removed list
	// withApplyLock runs f on the backend with no entry being applied and
	// no commit running.
	withApplyLock func(f func(be backend.Backend))
	dbs           snapshotDBs
}

// Process steps a message from a peer into raft.
func (p *raftPeer) Process(ctx context.Context, m *raftpb.Message) error {
	return p.node.Step(ctx, m)
}

// IsIDRemoved reports whether id was removed from the cluster.
func (p *raftPeer) IsIDRemoved(id uint64) bool { return p.removed(id) }

// ReportUnreachable tells raft a peer could not be reached.
func (p *raftPeer) ReportUnreachable(id uint64) { p.node.ReportUnreachable(id) }

// ReportSnapshot tells raft how sending a snapshot went.
func (p *raftPeer) ReportSnapshot(id uint64, status raft.SnapshotStatus) {
	p.node.ReportSnapshot(id, status)
}

// OpenSnapshot gives the peer transport the db to send along with a raft
// snapshot message: a consistent copy of the current backend, which covers
// at least everything up to the snapshot's index.
func (p *raftPeer) OpenSnapshot(m *raftpb.Message) (io.ReadCloser, int64, error) {
	var (
		pr   *io.PipeReader
		size int64
	)
	p.withApplyLock(func(be backend.Backend) {
		snap := be.Snapshot()
		var pw *io.PipeWriter
		pr, pw = io.Pipe()
		go func() {
			_, err := snap.WriteTo(pw)
			snap.Close()
			pw.CloseWithError(err)
		}()
		size = snap.Size()
	})
	return pr, size, nil
}

// SaveSnapshotDB stores a db received from the leader for snapshot index.
func (p *raftPeer) SaveSnapshotDB(r io.Reader, index uint64) (int64, error) {
	return p.dbs.SaveDBFrom(r, index)
}

// newTransport builds the peer transport of this member.
func newTransport(c *Config, self, clusterID uint64, rp *raftPeer) (*peer.Transport, error) {
	t := peer.New(peer.Config{
		ID: self, ClusterID: clusterID, URLs: c.PeerURLs,
		Raft: rp, Snapshots: rp, Logger: c.Logger,
		ServerVersion: serverVersion, MinClusterVersion: "3.0.0",
		TLS: c.PeerTLS, ConnReadTimeout: c.RaftReadTimeout, ConnWriteTimeout: c.RaftWriteTimeout,
		LocalAddr: c.PeerLocalAddr,
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

// PeerHandler serves the peer URLs: raft traffic, /members, /members/hashkv
// and /version.
func (s *Server) PeerHandler() http.Handler {
	mux := http.NewServeMux()
	raftHandler := s.transport.Handler()
	mux.Handle("/raft", raftHandler)
	mux.Handle("/raft/", raftHandler)
	mux.Handle("/members", membersHandler{clusterID: s.clusterID, members: s.stores.members, lg: s.lg})
	mux.Handle(peerHashKVPath, hashKVHandler{clusterID: s.clusterID, hash: s.stores.hashByRev, lg: s.lg})
	mux.HandleFunc(promotePath, s.memberAdmin.servePromote)
	mux.HandleFunc(learnerSettingsPath, s.memberAdmin.serveLearnerSettings)
	mux.HandleFunc(leasesPath, s.leases.serveLeaseRenew)
	mux.HandleFunc(leasesInternalPath, s.leases.serveLeaseInternal)
	mux.HandleFunc("/version", s.versions.serveVersion)
	return mux
}

// membersHandler answers GET /members with the member list, as etcd's
// peer handler does; a joining member learns the cluster from it.
type membersHandler struct {
	clusterID uint64
	members   func() []*membership.Member // the applied members
	lg        *zap.Logger
}

func (h membersHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Etcd-Cluster-ID", strconv.FormatUint(h.clusterID, 16))
	members := h.members()
	if members == nil {
		members = []*membership.Member{}
	}
	if err := json.NewEncoder(w).Encode(members); err != nil {
		h.lg.Warn("failed to encode members response", zap.Error(err))
	}
}
