// Package snap owns the files in member/snap other than the backend: the
// raft snapshot files "%016x-%016x.snap" (term, index) in etcd v3.7's format
// (a snappb.Snapshot wrapping a raftpb.Snapshot with its CRC-32C), and the
// "%016x.snap.db" database snapshots received from a leader. It never reads
// or applies the database itself.
package snap

import (
	"errors"
	"fmt"
	"github.com/cairnkv/cairn/server/metrics"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cairnkv/cairn/pkg/fileutil"
	"github.com/cairnkv/cairn/server/snap/snappb"
	"github.com/cairnkv/cairn/server/wal/walpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

const snapSuffix = ".snap"

var (
	// ErrNoSnapshot: no snap file could be loaded (or none matched).
	ErrNoSnapshot = errors.New("snap: no available snapshot")
	// ErrEmptySnapshot: a snap file is empty or carries no data or CRC.
	ErrEmptySnapshot = errors.New("snap: empty snapshot")
	// ErrCRCMismatch: a snap file's data does not match its CRC.
	ErrCRCMismatch = errors.New("snap: crc mismatch")
	// ErrNoDBSnapshot: the requested .snap.db file does not exist.
	ErrNoDBSnapshot = errors.New("snap: snapshot file doesn't exist")

	crcTable = crc32.MakeTable(crc32.Castagnoli)
	// expectedFiles lives in member/snap without being a snapshot.
	expectedFiles = map[string]bool{"db": true}
)

// Snapshotter reads and writes the snapshot files of one directory.
type Snapshotter struct {
	lg  *zap.Logger
	dir string
}

// New returns a Snapshotter for dir.
func New(lg *zap.Logger, dir string) *Snapshotter {
	if lg == nil {
		lg = zap.NewNop()
	}
	return &Snapshotter{lg: lg, dir: dir}
}

// FileName is the name of the .snap file of the snapshot at term and index.
func FileName(term, index uint64) string {
	return fmt.Sprintf("%016x-%016x%s", term, index, snapSuffix)
}

// SaveSnap writes snapshot to "<term>-<index>.snap" and fsyncs it. An empty
// snapshot (index 0) is not written.
func (s *Snapshotter) SaveSnap(snapshot *raftpb.Snapshot) error {
	if raft.IsEmptySnap(snapshot) {
		return nil
	}
	start := time.Now()
	data, err := proto.Marshal(snapshot)
	if err != nil {
		return err
	}
	metrics.SnapMarshalSeconds.Observe(time.Since(start).Seconds())
	env := snappb.Snapshot{Crc: crc32.Update(0, crcTable, data), Data: data}
	md := snapshot.GetMetadata()
	path := filepath.Join(s.dir, FileName(md.GetTerm(), md.GetIndex()))
	if err := writeSnapFile(path, env.Marshal()); err != nil {
		s.lg.Warn("failed to write a snap file", zap.String("path", path), zap.Error(err))
		if rerr := os.Remove(path); rerr != nil && !os.IsNotExist(rerr) {
			s.lg.Warn("failed to remove a broken snap file", zap.String("path", path), zap.Error(rerr))
		}
		return err
	}
	metrics.SnapSaveSeconds.Observe(time.Since(start).Seconds())
	return nil
}

// writeSnapFile writes and fsyncs a .snap file, timing the whole write as
// the fsync (WriteAndSyncFile does not expose the two apart). The directory
// is fsynced too: the WAL records the snapshot right after this returns, and
// a power cut must not keep that record while losing the file's name.
func writeSnapFile(path string, data []byte) error {
	start := time.Now()
	if err := disk.writeAndSync(path, data, 0o666); err != nil {
		return err
	}
	metrics.SnapFsyncSeconds.Observe(time.Since(start).Seconds())
	return disk.fsyncDir(filepath.Dir(path))
}

// Load returns the newest snapshot that can be read. Unreadable files met on
// the way are renamed to *.broken so they are not tried again.
func (s *Snapshotter) Load() (*raftpb.Snapshot, error) {
	return s.loadMatching(func(*raftpb.Snapshot) bool { return true })
}

// LoadNewestAvailable returns the newest readable snapshot whose term and
// index match one of walSnaps, the snapshots the WAL vouches for.
func (s *Snapshotter) LoadNewestAvailable(walSnaps []walpb.Snapshot) (*raftpb.Snapshot, error) {
	return s.loadMatching(func(snap *raftpb.Snapshot) bool {
		md := snap.GetMetadata()
		for i := len(walSnaps) - 1; i >= 0; i-- {
			if md.GetTerm() == walSnaps[i].Term && md.GetIndex() == walSnaps[i].Index {
				return true
			}
		}
		return false
	})
}

func (s *Snapshotter) loadMatching(match func(*raftpb.Snapshot) bool) (*raftpb.Snapshot, error) {
	names, err := s.snapNames()
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		snap, err := s.loadSnap(name)
		if err == nil && match(snap) {
			return snap, nil
		}
	}
	return nil, ErrNoSnapshot
}

// loadSnap reads one file and sets it aside as *.broken if it is damaged.
func (s *Snapshotter) loadSnap(name string) (*raftpb.Snapshot, error) {
	path := filepath.Join(s.dir, name)
	snap, err := Read(path)
	if err != nil {
		s.lg.Warn("failed to read a snap file", zap.String("path", path), zap.Error(err))
		if rerr := os.Rename(path, path+".broken"); rerr != nil {
			s.lg.Warn("failed to rename a broken snap file", zap.String("path", path), zap.Error(rerr))
		} else {
			s.lg.Warn("renamed to a broken snap file", zap.String("path", path), zap.String("broken-path", path+".broken"))
		}
	}
	return snap, err
}

// Read decodes and checks the snap file at path.
func Read(path string) (*raftpb.Snapshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeSnapFile(b)
}

// decodeSnapFile checks and decodes the content of a snap file. Any bytes
// give a snapshot or an error, never a panic: a damaged file is set aside
// by the caller, not trusted.
func decodeSnapFile(b []byte) (*raftpb.Snapshot, error) {
	if len(b) == 0 {
		return nil, ErrEmptySnapshot
	}
	var env snappb.Snapshot
	if err := env.Unmarshal(b); err != nil {
		return nil, err
	}
	if len(env.Data) == 0 || env.Crc == 0 {
		return nil, ErrEmptySnapshot
	}
	if crc32.Update(0, crcTable, env.Data) != env.Crc {
		return nil, ErrCRCMismatch
	}
	snap := &raftpb.Snapshot{}
	if err := proto.Unmarshal(env.Data, snap); err != nil {
		return nil, err
	}
	return snap, nil
}

// snapNames returns the *.snap files, newest first. Fixed-width hex names
// sort by term, then index. Orphaned defragmentation files are removed.
func (s *Snapshotter) snapNames() ([]string, error) {
	all, err := fileutil.ReadDirNames(s.dir, "")
	if err != nil {
		return nil, err
	}
	var snaps []string
	for _, name := range all {
		switch {
		case strings.HasSuffix(name, snapSuffix):
			snaps = append(snaps, name)
		case strings.HasPrefix(name, "db.tmp"):
			s.lg.Info("found orphaned defragmentation file; deleting", zap.String("path", name))
			if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !os.IsNotExist(err) {
				return nil, fmt.Errorf("failed to remove orphaned defragmentation file %s: %w", name, err)
			}
		case !expectedFiles[name] && !strings.HasSuffix(name, ".snap.db") && !strings.HasSuffix(name, ".broken"):
			s.lg.Warn("found unexpected non-snap file; skipping", zap.String("path", name))
		}
	}
	if len(snaps) == 0 {
		return nil, ErrNoSnapshot
	}
	sort.Sort(sort.Reverse(sort.StringSlice(snaps)))
	return snaps, nil
}
