package etcdserver

import (
	"fmt"
	"os"
	"sort"

	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/wal"
)

// --force-new-cluster turns a restarting member into the only member of its
// cluster, keeping its data: the recovery path when quorum is lost for good.
//
// The member reads its WAL as on any restart, drops the entries that were
// never committed (no quorum vouched for them), and appends, at the current
// term, one conf change removing every other member raft knows of. The
// hard state's commit index is moved to the last of these entries and the
// whole lot is written to the WAL before raft starts, so the removals are
// applied like any committed conf change (the members bucket loses the
// others, the transport drops them) and, once applied, raft's configuration
// holds this member alone, which then elects itself. The cluster ID and the
// member ID are kept, so clients and new members see the same cluster.

// forceNewCluster rewrites the tail of a restarting member's log; it returns
// the entries and hard state raft must start from.
func (bs bootstrapper) forceNewCluster(w *wal.WAL, self uint64, snapshot *raftpb.Snapshot, hs *raftpb.HardState, ents []*raftpb.Entry) (*raftpb.HardState, []*raftpb.Entry, error) {
	commit := hs.GetCommit()
	// The apply loop may run ahead of the hard state on disk: what the
	// backend already applied was committed, so it is kept too (else the
	// removals would land at indexes the backend believes it holds).
	if ci := bs.backendConsistentIndex(); ci > commit {
		commit = ci
	}
	if n := len(ents); n > 0 && commit > ents[n-1].GetIndex() {
		commit = ents[n-1].GetIndex()
	}
	for i, e := range ents {
		if e.GetIndex() > commit {
			bs.lg.Info("discarding uncommitted WAL entries", zap.Uint64("from-index", e.GetIndex()), zap.Int("count", len(ents)-i))
			ents = ents[:i]
			break
		}
	}
	voters, learners := confIDs(snapshot, ents)
	if learners[self] {
		return nil, nil, fmt.Errorf("--force-new-cluster: member %s is a learner; promote it first or restore from a snapshot", idHex(self))
	}
	if !voters[self] {
		return nil, nil, fmt.Errorf("--force-new-cluster: member %s is not a voter of its cluster", idHex(self))
	}
	var others []uint64
	for id := range voters {
		if id != self {
			others = append(others, id)
		}
	}
	for id := range learners {
		others = append(others, id)
	}
	sort.Slice(others, func(i, j int) bool { return others[i] < others[j] })

	last := uint64(0)
	if snapshot != nil {
		last = snapshot.GetMetadata().GetIndex()
	}
	if n := len(ents); n > 0 {
		last = ents[n-1].GetIndex()
	}
	term := hs.GetTerm()
	var added []*raftpb.Entry
	for _, id := range others {
		cc := &raftpb.ConfChange{Type: raftpb.ConfChangeRemoveNode.Enum(), NodeId: proto.Uint64(id)}
		data, err := proto.Marshal(cc)
		if err != nil {
			return nil, nil, err
		}
		last++
		added = append(added, &raftpb.Entry{Type: raftpb.EntryConfChange.Enum(), Term: proto.Uint64(term), Index: proto.Uint64(last), Data: data})
		bs.lg.Warn("force-new-cluster: removing member", zap.String("member-id", idHex(id)))
	}
	nhs := &raftpb.HardState{Term: proto.Uint64(term), Vote: proto.Uint64(hs.GetVote()), Commit: proto.Uint64(last)}
	if err := w.Save(nhs, added); err != nil {
		return nil, nil, fmt.Errorf("--force-new-cluster: write wal: %w", err)
	}
	bs.lg.Warn("forcing restart as a one-member cluster", zap.String("local-member-id", idHex(self)),
		zap.Int("removed-members", len(others)), zap.Uint64("commit-index", last))
	return nhs, append(ents, added...), nil
}

// confIDs replays the configuration: the snapshot's, then every conf change
// in ents.
func confIDs(snapshot *raftpb.Snapshot, ents []*raftpb.Entry) (voters, learners map[uint64]bool) {
	voters, learners = map[uint64]bool{}, map[uint64]bool{}
	if snapshot != nil {
		cs := snapshot.GetMetadata().GetConfState()
		for _, id := range cs.GetVoters() {
			voters[id] = true
		}
		for _, id := range cs.GetLearners() {
			learners[id] = true
		}
	}
	for _, e := range ents {
		if e.GetType() != raftpb.EntryConfChange {
			continue
		}
		cc := &raftpb.ConfChange{}
		if err := proto.Unmarshal(e.GetData(), cc); err != nil {
			continue
		}
		id := cc.GetNodeId()
		switch cc.GetType() {
		case raftpb.ConfChangeAddNode:
			voters[id] = true
			delete(learners, id)
		case raftpb.ConfChangeAddLearnerNode:
			learners[id] = true
			delete(voters, id)
		case raftpb.ConfChangeRemoveNode:
			delete(voters, id)
			delete(learners, id)
		}
	}
	return voters, learners
}

// backendConsistentIndex reads the consistent index of the member's db
// (0 when there is none yet).
func (bs bootstrapper) backendConsistentIndex() uint64 {
	if _, err := os.Stat(bs.cfg.backendPath()); err != nil {
		return 0
	}
	be, err := backend.Open(backend.Config{Path: bs.cfg.backendPath(), Logger: bs.lg})
	if err != nil {
		return 0
	}
	defer be.Close()
	tx := be.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	ci, _ := backend.ReadUint64(tx, backend.BucketMeta, backend.MetaConsistentIndex)
	return ci
}
