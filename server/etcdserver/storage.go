package etcdserver

import (
	"sync"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairnkv/cairn/pkg/failpoint"
	"github.com/cairnkv/cairn/server/snap"
	"github.com/cairnkv/cairn/server/wal"
	"github.com/cairnkv/cairn/server/wal/walpb"
)

// raftStorage persists raft state in the WAL and snap files. The raft loop
// calls Save; the apply loop's snapshots call SaveSnap, from a goroutine of
// their own, so the WAL is guarded by a mutex.
type raftStorage struct {
	mu          sync.Mutex
	wal         *wal.WAL
	snapshotter *snap.Snapshotter
}

func (st *raftStorage) Save(hs *raftpb.HardState, ents []*raftpb.Entry) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.wal.Save(hs, ents)
}

// Sync makes the WAL durable up to its last record.
func (st *raftStorage) Sync() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.wal.Sync()
}

// SaveSnap writes the .snap file first, then the WAL marker: a marker
// without its file would make restart look for a snapshot that is not there.
// Only the marker takes the WAL's mutex: the raft loop's appends need not
// wait for the .snap file's write and fsync.
func (st *raftStorage) SaveSnap(s *raftpb.Snapshot) error {
	if err := st.snapshotter.SaveSnap(s); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	md := s.GetMetadata()
	marker := walpb.Snapshot{Index: md.GetIndex(), Term: md.GetTerm(), ConfState: md.GetConfState()}
	if err := st.wal.SaveSnapshot(marker); err != nil {
		return err
	}
	if err := st.wal.ReleaseLockTo(md.GetIndex()); err != nil {
		return err
	}
	failpoint.Inject("raftAfterWALRelease")
	return nil
}

func (st *raftStorage) Close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.wal.Close()
}
