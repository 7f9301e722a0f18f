package etcdserver

import (
	"fmt"
	"os"

	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/failpoint"
	"github.com/cairnkv/cairn/server/metrics"
)

// Snapshots from the leader. A follower that fell behind the leader's log
// compaction receives a raft snapshot together with the leader's whole db.
// The peer transport stores the db as <snap-dir>/<index>.snap.db
// (SaveSnapshotDB) before raft sees the snapshot message; raftnode persists
// the snapshot (.snap file, WAL marker) and only then hands it to the apply
// loop, which installs the db here. A crash between the two steps is
// finished at the next start (openStores).

// installSnapshot replaces the backend with the db that came with snapshot
// and makes the member's state that of the snapshot.
func (s *Server) installSnapshot(snap *raftpb.Snapshot) error {
	index := snap.GetMetadata().GetIndex()
	s.lg.Info("applying snapshot from leader", zap.Uint64("snapshot-index", index))
	metrics.SnapshotApplyInProgress.Set(1)
	defer metrics.SnapshotApplyInProgress.Set(0)
	s.snaps.wait() // ours, of an older index, saved before the leader's replaces it
	s.commits.mu.Lock()
	s.stores.mu.Lock()
	s.stores.be.Commit()
	s.stores.close()
	failpoint.Inject("applyBeforeOpenSnapshot")
	err := s.storage.moveSnapshotDB(index, s.cfg.backendPath())
	if err == nil {
		err = s.openBackendStores()
	}
	s.membersChanged() // the snapshot's members bucket replaced ours
	s.stores.mu.Unlock()
	s.commits.mu.Unlock()
	if err != nil {
		return fmt.Errorf("install snapshot %d: %w", index, err)
	}
	s.raftView.setConfState(snap.GetMetadata().GetConfState())
	s.snaps.installed(index)
	s.appliedIndex.Store(index)
	s.appliedWait.Trigger(index)
	s.snapshotsInstalled.Add(1)
	s.lg.Info("applied snapshot from leader", zap.Uint64("snapshot-index", index), zap.Uint64("consistent-index", s.commits.index))
	return nil
}

// moveSnapshotDB puts the received db for index in place of the backend
// file at backendPath.
func (st *raftStorage) moveSnapshotDB(index uint64, backendPath string) error {
	path, err := st.snapshotter.DBFilePath(index)
	if err != nil {
		return err
	}
	return os.Rename(path, backendPath)
}
