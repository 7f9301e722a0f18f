package etcdserver

import (
	"errors"
	"fmt"
	"path/filepath"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/fileutil"
	"github.com/cairnkv/cairn/server/snap"
	"github.com/cairnkv/cairn/server/wal"
	"github.com/cairnkv/cairn/server/wal/walpb"
)

// ErrInconsistentStorage is wrapped by every error that refuses a start
// because the member's files disagree with each other: serving (or, in a
// cluster, voting) on them could hand out data that raft no longer backs,
// or forget entries this member acknowledged to its leader.
var ErrInconsistentStorage = errors.New("inconsistent storage")

// storageFault describes one way the member's files disagree. Its message
// names the files and indexes involved and says how to recover.
type storageFault struct {
	memberID uint64
	problem  string
}

func (f *storageFault) Error() string {
	id := "<member ID>" // the WAL's metadata, which names it, was not read
	if f.memberID != 0 {
		id = idHex(f.memberID)
	}
	return fmt.Sprintf("%v, refusing to start: %s; this member must not serve or vote with these files: "+
		"restore its data directory from a snapshot (cairnutl snapshot restore), "+
		"or remove it from the cluster (cairnctl member remove %s) and add it back as a new member with an empty data directory",
		ErrInconsistentStorage, f.problem, id)
}

func (f *storageFault) Unwrap() error { return ErrInconsistentStorage }

// walView is what bootstrap learned of the WAL, for the checks against the
// snapshot and the backend.
type walView struct {
	dir       string
	tailPath  string // the last segment
	lastIndex uint64 // index of the last entry, or of the snapshot it starts from
}

// checkWALReadable turns damage found while opening or replaying the WAL
// into a refusal. A lock held by another process is not damage.
func checkWALReadable(dir string, err error) error {
	if err == nil || errors.Is(err, fileutil.ErrLocked) {
		return err
	}
	return &storageFault{memberID: memberIDFromWAL(dir), problem: fmt.Sprintf("the WAL in %s cannot be replayed: %v", dir, err)}
}

// memberIDFromWAL reads the member ID from the metadata at the start of the
// WAL, or 0 if even that is unreadable.
func memberIDFromWAL(dir string) uint64 {
	b, err := wal.ReadMetadata(dir)
	if err != nil {
		return 0
	}
	md := &pb.Metadata{}
	if proto.Unmarshal(b, md) != nil {
		return 0
	}
	return md.GetNodeID()
}

// checkSnapshotPresent refuses a start when the newest snapshot the WAL
// vouches for has no readable .snap file: the WAL segments before it may
// have been purged, and the backend may already be past it.
func checkSnapshotPresent(snapDir, walDir string, walSnaps []walpb.Snapshot, loaded *raftpb.Snapshot) error {
	newest := walpb.Snapshot{}
	for _, s := range walSnaps {
		if s.Index > newest.Index {
			newest = s
		}
	}
	if newest.Index == 0 || (loaded != nil && loaded.GetMetadata().GetIndex() >= newest.Index) {
		return nil
	}
	have := "no older snapshot file matches the WAL either"
	if loaded != nil {
		have = fmt.Sprintf("the newest readable one is at index %d", loaded.GetMetadata().GetIndex())
	}
	return &storageFault{memberID: memberIDFromWAL(walDir), problem: fmt.Sprintf(
		"the WAL in %s records a snapshot at index %d (term %d) but its file %s is missing or unreadable (%s)",
		walDir, newest.Index, newest.Term, filepath.Join(snapDir, snap.FileName(newest.Term, newest.Index)), have)}
}

// checkCommitInWAL refuses a HardState that commits entries the WAL does
// not hold: the log lost entries after this member acknowledged them.
func checkCommitInWAL(memberID uint64, w walView, hs *raftpb.HardState) error {
	if hs.GetCommit() <= w.lastIndex {
		return nil
	}
	return &storageFault{memberID: memberID, problem: fmt.Sprintf(
		"the WAL in %s commits index %d but its entries end at index %d (last segment %s)",
		w.dir, hs.GetCommit(), w.lastIndex, w.tailPath)}
}

// checkBackendNotAheadOfWAL refuses a backend that has applied entries the WAL
// no longer holds. raft would restart from the WAL's shorter log, append
// different entries at those indexes, and the backend would skip them as
// already applied.
func checkBackendNotAheadOfWAL(memberID uint64, backendPath string, w walView, consistentIndex uint64) error {
	if consistentIndex <= w.lastIndex {
		return nil
	}
	where := "the WAL in " + w.dir
	if w.tailPath != "" {
		where += " (last segment " + filepath.Base(w.tailPath) + ")"
	}
	return &storageFault{memberID: memberID, problem: fmt.Sprintf(
		"the backend %s has applied entries up to index %d but %s ends at index %d: entries %d to %d are missing from the WAL",
		backendPath, consistentIndex, where, w.lastIndex, w.lastIndex+1, consistentIndex)}
}
