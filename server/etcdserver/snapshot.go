package etcdserver

import (
	"fmt"
	"github.com/cairnkv/cairn/server/metrics"
	"io"
	"os"

	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/failpoint"
)

// Snapshots from the leader. A follower that fell behind the leader's log
// compaction receives a raft snapshot together with the leader's whole db.
// The peer transport stores the db as <snap-dir>/<index>.snap.db
// (SaveSnapshotDB) before raft sees the snapshot message; raftnode persists
// the snapshot (.snap file, WAL marker) and only then hands it to the apply
// loop, which installs the db here. A crash between the two steps is
// finished at the next start (openStores).

// OpenSnapshot gives the peer transport the db to send along with a raft
// snapshot message: a consistent copy of the current backend, which covers
// at least everything up to the snapshot's index.
func (s *Server) OpenSnapshot(m *raftpb.Message) (io.ReadCloser, int64, error) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	snap := s.be.Snapshot()
	pr, pw := io.Pipe()
	go func() {
		_, err := snap.WriteTo(pw)
		snap.Close()
		pw.CloseWithError(err)
	}()
	return pr, snap.Size(), nil
}

// SaveSnapshotDB stores a db received from the leader for snapshot index.
func (s *Server) SaveSnapshotDB(r io.Reader, index uint64) (int64, error) {
	return s.storage.snapshotter.SaveDBFrom(r, index)
}

// installSnapshot replaces the backend with the db that came with snapshot
// and makes the member's state that of the snapshot.
func (s *Server) installSnapshot(snap *raftpb.Snapshot) error {
	index := snap.GetMetadata().GetIndex()
	s.lg.Info("applying snapshot from leader", zap.Uint64("snapshot-index", index))
	metrics.SnapshotApplyInProgress.Set(1)
	defer metrics.SnapshotApplyInProgress.Set(0)
	s.applyMu.Lock()
	s.storeMu.Lock()
	s.be.Commit()
	s.closeBackendStores()
	failpoint.Inject("applyBeforeOpenSnapshot")
	err := s.moveSnapshotDB(index)
	if err == nil {
		err = s.openBackendStores()
	}
	s.leases.peersChanged() // the snapshot's members bucket replaced ours
	s.storeMu.Unlock()
	s.applyMu.Unlock()
	if err != nil {
		return fmt.Errorf("install snapshot %d: %w", index, err)
	}
	s.setConfState(snap.GetMetadata().GetConfState())
	s.snapshotIndex = index
	s.appliedIndex.Store(index)
	s.appliedWait.Trigger(index)
	s.snapshotsInstalled.Add(1)
	s.lg.Info("applied snapshot from leader", zap.Uint64("snapshot-index", index), zap.Uint64("consistent-index", s.consistentIdx))
	return nil
}

// moveSnapshotDB puts the received db for index in place of the backend file.
func (s *Server) moveSnapshotDB(index uint64) error {
	path, err := s.storage.snapshotter.DBFilePath(index)
	if err != nil {
		return err
	}
	return os.Rename(path, s.cfg.backendPath())
}
