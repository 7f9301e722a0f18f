package etcdserver

import (
	"go.etcd.io/etcd/api/v3/membershippb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/membership/v2store"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// peerConnector is the peer transport's part in a membership change
// (*peer.Transport).
type peerConnector interface {
	AddPeer(id uint64, urls []string)
	UpdatePeer(id uint64, urls []string)
	RemovePeer(id uint64)
}

// memberRecords writes the applied membership into the backend's members
// buckets: conf changes (added, updated, promoted and removed members) and
// the attributes a member publishes; it tells the peer transport whom to
// connect to. The apply loop calls it.
type memberRecords struct {
	self  uint64
	peers peerConnector // set once the transport exists, before the member starts
	lg    *zap.Logger
}

// applyChange records a conf change in the members buckets. The
// caller holds the batch tx lock; it runs the returned func after releasing
// it, to tell the transport (which may wait for peer goroutines).
func (r memberRecords) applyChange(tx backend.UnsafeWriter, cc *raftpb.ConfChange) (connect func()) {
	connect = func() {}
	switch cc.GetType() {
	case raftpb.ConfChangeAddNode, raftpb.ConfChangeAddLearnerNode, raftpb.ConfChangeUpdateNode:
		change := &membership.ChangeContext{}
		if err := jsonUnmarshal(cc.GetContext(), change); err != nil {
			r.lg.Error("conf change carries no member", zap.Error(err))
			return connect
		}
		m := &change.Member
		old := findIn(tx, m.ID)
		switch {
		case change.IsPromote && old == nil:
			r.lg.Error("conf change promotes an unknown member", zap.String("member-id", idHex(m.ID)))
			return connect
		case change.IsPromote:
			// etcd's promotion names only the member: it keeps everything
			// but its learner flag.
			promoted := *old
			promoted.IsLearner = false
			m = &promoted
		case old != nil:
			// An update, or a promotion in cairn's older form (the whole
			// member): keep what the member published.
			m.Name, m.ClientURLs = old.Name, old.ClientURLs
		}
		if err := membership.Save(tx, m); err != nil {
			r.lg.Error("cannot save member", zap.Error(err))
		}
		if cc.GetType() == raftpb.ConfChangeUpdateNode {
			connect = func() { r.peers.UpdatePeer(m.ID, m.PeerURLs) }
		} else {
			connect = func() { r.peers.AddPeer(m.ID, m.PeerURLs) }
		}
	case raftpb.ConfChangeRemoveNode:
		membership.Remove(tx, cc.GetNodeId())
		if id := cc.GetNodeId(); id != r.self {
			connect = func() { r.peers.RemovePeer(id) }
		}
	}
	return connect
}

func findIn(tx backend.UnsafeReader, id uint64) *membership.Member {
	members, _ := membership.Load(tx)
	for _, m := range members {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// applyAttrs records the name and client URLs a member published.
func (r memberRecords) applyAttrs(be backend.Backend, req *membershippb.ClusterMemberAttrSetRequest) {
	tx := be.BatchTx()
	tx.Lock()
	defer tx.Unlock()
	members, err := membership.Load(tx)
	if err != nil {
		r.lg.Error("cannot load members", zap.Error(err))
		return
	}
	for _, m := range members {
		if m.ID == req.GetMember_ID() {
			m.Name = req.GetMemberAttributes().GetName()
			m.ClientURLs = req.GetMemberAttributes().GetClientUrls()
			if err := membership.Save(tx, m); err != nil {
				r.lg.Error("cannot save member", zap.Error(err))
			}
			return
		}
	}
}

// membershipSnapshot encodes the current membership and cluster version as
// the v2-store JSON etcd v3.7 writes into every snapshot file, so that the
// .snap files are etcd's byte for byte.
func membershipSnapshot(be backend.Backend, clusterVersion func() string) ([]byte, error) {
	tx := be.ReadTx()
	tx.RLock()
	members, err := membership.Load(tx)
	if err != nil {
		tx.RUnlock()
		return nil, err
	}
	removed, err := membership.LoadRemoved(tx)
	tx.RUnlock()
	if err != nil {
		return nil, err
	}
	st := v2store.New()
	for _, m := range members {
		st.AddMember(m.ID, m.PeerURLs, m.IsLearner)
		if m.ClientURLs != nil {
			st.SetMemberAttributes(m.ID, m.Name, m.ClientURLs)
		}
	}
	for _, id := range removed {
		st.RemoveMember(id)
	}
	st.SetClusterVersion(clusterVersion())
	return st.Save()
}
