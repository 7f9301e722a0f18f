package utl

import (
	"encoding/json"
	"os"
	"path/filepath"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/membership/v2store"
	"github.com/cairnkv/cairn/server/snap"
	"github.com/cairnkv/cairn/server/wal"
	"github.com/cairnkv/cairn/server/wal/walpb"
)

// bootstrapTerm is the term of the bootstrap entries and of the snapshot.
const bootstrapTerm = 1

// writeRaftState writes the new member's WAL and .snap file, as etcdutl
// does: the WAL holds the metadata (member and cluster ID), one
// ConfChangeAddNode entry per member (index 1..n, term 1, the member's JSON
// as context), the HardState {term 1, vote: lowest ID, commit n} and a
// snapshot record at n; the .snap file holds the membership at n in the v2
// store form. Learners are not supported, as in etcdutl.
func writeRaftState(p *restorePlan) error {
	self := p.cl.memberByName(p.cfg.Name)
	md, err := proto.Marshal(&pb.Metadata{NodeID: proto.Uint64(self.ID), ClusterID: proto.Uint64(p.cl.id)})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.walDir), 0o700); err != nil {
		return err
	}
	w, err := wal.Create(p.cfg.Logger, p.walDir, md)
	if err != nil {
		return err
	}
	defer w.Close()
	ents, err := bootstrapEntries(p.cl)
	if err != nil {
		return err
	}
	commit := uint64(len(ents))
	hs := &raftpb.HardState{Term: proto.Uint64(bootstrapTerm), Vote: proto.Uint64(p.cl.members[0].ID), Commit: proto.Uint64(commit)}
	if err := w.Save(hs, ents); err != nil {
		return err
	}
	cs := &raftpb.ConfState{Voters: p.cl.ids()}
	if err := saveSnapFile(p, commit, cs); err != nil {
		return err
	}
	return w.SaveSnapshot(walpb.Snapshot{Index: commit, Term: bootstrapTerm, ConfState: cs})
}

// bootstrapEntries are the entries a new cluster's raft log starts with.
func bootstrapEntries(cl *cluster) ([]*raftpb.Entry, error) {
	ents := make([]*raftpb.Entry, len(cl.members))
	for i, m := range cl.members {
		ctx, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		cc := &raftpb.ConfChange{Type: raftpb.ConfChangeAddNode.Enum(), NodeId: proto.Uint64(m.ID), Context: ctx}
		data, err := proto.Marshal(cc)
		if err != nil {
			return nil, err
		}
		ents[i] = &raftpb.Entry{Type: raftpb.EntryConfChange.Enum(), Term: proto.Uint64(bootstrapTerm), Index: proto.Uint64(uint64(i + 1)), Data: data}
	}
	return ents, nil
}

func saveSnapFile(p *restorePlan, index uint64, cs *raftpb.ConfState) error {
	data, err := membershipPayload(p.cl)
	if err != nil {
		return err
	}
	s := &raftpb.Snapshot{
		Data:     data,
		Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(index), Term: proto.Uint64(bootstrapTerm), ConfState: cs},
	}
	return snap.New(p.cfg.Logger, p.snapDir).SaveSnap(s)
}

// membershipPayload is the v2 store etcd puts in a snapshot for cl: the
// members' raft attributes only, since no member has published its name and
// client URLs yet, and no cluster version.
func membershipPayload(cl *cluster) ([]byte, error) {
	st := v2store.New()
	for _, m := range cl.members {
		st.AddMember(m.ID, m.PeerURLs, m.IsLearner)
	}
	return st.Save()
}
