package etcdserver

import (
	"fmt"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
)

// raftLog is the part of raft's in-memory log the snapshot saver uses.
type raftLog interface {
	FirstIndex() (uint64, error)
	CreateSnapshot(i uint64, cs *raftpb.ConfState, data []byte) (*raftpb.Snapshot, error)
	Compact(compactIndex uint64) error
}

// snapFiles writes a snapshot to disk: its .snap file and its WAL marker.
type snapFiles interface {
	SaveSnap(snap *raftpb.Snapshot) error
}

// snapshotSaver saves the member's own raft snapshots in the background,
// one at a time, and knows the index of the newest snapshot (its own,
// one from the leader, or the one the member started from). The apply
// loop only cuts a backend commit and hands over what the snapshot holds;
// the saver waits until that commit is durable, so that the snapshot never
// claims state the db does not hold, then writes the files and trims
// raft's log. Its methods are called from the apply loop only.
type snapshotSaver struct {
	lg      *zap.Logger
	log     raftLog
	files   snapFiles
	catchUp uint64       // --snapshot-catchup-entries kept in raft's log
	run     func(func()) // starts a goroutine the member's Stop waits for
	fail    func(error)  // stops the member

	index  uint64        // of the newest snapshot
	saving chan struct{} // closed once the snapshot in progress is saved; nil if none
}

// due reports whether applied is more than count entries past the newest
// snapshot.
func (ss *snapshotSaver) due(applied, count uint64) bool { return applied-ss.index > count }

// installed records a snapshot the member now holds without saving it
// (received from the leader, or found at start).
func (ss *snapshotSaver) installed(index uint64) { ss.index = index }

// logCompacted reports whether raft's log no longer starts at the first
// entry, so a member that joins now can only catch up through a snapshot.
func (ss *snapshotSaver) logCompacted() bool {
	first, err := ss.log.FirstIndex()
	return err == nil && first > 1
}

// save saves, once durable is closed, the snapshot at applied with
// confState and the membership payload. It waits for the previous save
// first.
func (ss *snapshotSaver) save(applied uint64, confState *raftpb.ConfState, payload []byte, durable <-chan struct{}) {
	ss.wait()
	ss.index = applied
	saved := make(chan struct{})
	ss.saving = saved
	ss.run(func() {
		defer close(saved)
		<-durable
		ss.write(applied, confState, payload)
	})
}

// wait returns once the snapshot being saved, if any, is saved.
func (ss *snapshotSaver) wait() {
	if ss.saving != nil {
		<-ss.saving
		ss.saving = nil
	}
}

// write creates the snapshot in raft's log, saves it and compacts the log
// to catchUp entries before it.
func (ss *snapshotSaver) write(applied uint64, confState *raftpb.ConfState, payload []byte) {
	snap, err := ss.log.CreateSnapshot(applied, confState, payload)
	if err != nil {
		// ErrSnapOutOfDate: a snapshot from the leader came in meanwhile.
		ss.lg.Warn("cannot create snapshot", zap.Uint64("applied-index", applied), zap.Error(err))
		return
	}
	if err := ss.files.SaveSnap(snap); err != nil {
		ss.fail(fmt.Errorf("save snapshot: %w", err))
		return
	}
	ss.lg.Info("saved snapshot", zap.Uint64("snapshot-index", applied))
	if applied <= ss.catchUp {
		return
	}
	compactTo := applied - ss.catchUp
	if err := ss.log.Compact(compactTo); err != nil && err != raft.ErrCompacted {
		ss.lg.Warn("cannot compact raft log", zap.Uint64("index", compactTo), zap.Error(err))
		return
	}
	ss.lg.Info("compacted raft logs", zap.Uint64("compact-index", compactTo))
}
