package etcdserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/fileutil"
	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/snap"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/wal"
	"github.com/cairnkv/cairn/server/wal/walpb"
)

// bootstrapped is the raft side of a member ready to start.
type bootstrapped struct {
	id, clusterID uint64
	memStorage    *raft.MemoryStorage
	storage       *raftStorage
	node          *raft.RawNode
	snapshot      *raftpb.Snapshot // nil when the member starts without one
	peers         []*membership.Member
	wal           walView // checked against the backend once it is open
}

// bootstrapper opens or creates a member's raft state from its data dir
// before the member exists: it needs only the configuration.
type bootstrapper struct {
	cfg *Config
	lg  *zap.Logger
}

func (bs bootstrapper) raftConfig(id uint64, ms *raft.MemoryStorage) *raft.Config {
	return &raft.Config{
		ID:              id,
		ElectionTick:    bs.cfg.ElectionTicks,
		HeartbeatTick:   1,
		Storage:         ms,
		MaxSizePerMsg:   1024 * 1024,
		MaxInflightMsgs: 4096 / 8,
		CheckQuorum:     true,
		PreVote:         bs.cfg.PreVote,
		Logger:          newRaftLogger(bs.lg),
	}
}

// bootstrapRaft starts raft from the WAL when there is one, else creates it.
func (bs bootstrapper) bootstrapRaft() (*bootstrapped, error) {
	if err := os.MkdirAll(bs.cfg.snapDir(), 0o700); err != nil {
		return nil, fmt.Errorf("cannot access data directory: %w", err)
	}
	// MkdirAll may have just created these: their names must survive a
	// power cut, or the member would come back as a new, empty one.
	if err := syncNames(bs.cfg.snapDir(), bs.cfg.memberDir(), bs.cfg.DataDir); err != nil {
		return nil, fmt.Errorf("cannot sync data directory: %w", err)
	}
	if wal.Exist(bs.cfg.walDir()) {
		return bs.restartRaft()
	}
	if !bs.cfg.NewCluster {
		return clusterJoiner{cfg: bs.cfg, lg: bs.lg, raftConfig: bs.raftConfig}.join()
	}
	return bs.startNewRaft()
}

func (bs bootstrapper) initialMembers() ([]*membership.Member, error) {
	names := make([]string, 0, len(bs.cfg.InitialCluster))
	for name := range bs.cfg.InitialCluster {
		names = append(names, name)
	}
	sort.Strings(names)
	members := make([]*membership.Member, 0, len(names))
	for _, name := range names {
		urls := bs.cfg.InitialCluster[name]
		// As in etcd, the bootstrap entry carries IDs, peer URLs and names;
		// client URLs arrive later, when each member publishes itself.
		m := &membership.Member{ID: membership.ComputeMemberID(urls, bs.cfg.InitialClusterToken, nil), PeerURLs: urls, Name: name}
		members = append(members, m)
	}
	return members, nil
}

func (bs bootstrapper) startNewRaft() (*bootstrapped, error) {
	members, err := bs.initialMembers()
	if err != nil {
		return nil, err
	}
	ids := make([]uint64, len(members))
	peers := make([]raft.Peer, len(members))
	var self uint64
	for i, m := range members {
		ids[i] = m.ID
		ctx, _ := jsonMember(m)
		peers[i] = raft.Peer{ID: m.ID, Context: ctx}
		if m.Name == bs.cfg.Name {
			self = m.ID
		}
	}
	cid := membership.ComputeClusterID(ids)
	b, err := freshMember(bs.cfg, bs.lg, self, cid, bs.raftConfig)
	if err != nil {
		return nil, err
	}
	if err := b.node.Bootstrap(peers); err != nil {
		b.storage.wal.Close()
		return nil, err
	}
	bs.lg.Info("starting local member", zap.String("local-member-id", idHex(self)), zap.String("cluster-id", idHex(cid)))
	b.peers = members
	b.wal.lastIndex = uint64(len(peers)) // raft's bootstrap adds one conf change entry per initial member
	return b, nil
}

// freshMember creates what a member with an empty data dir starts from: a
// WAL whose metadata names member id of cluster clusterID, and a raft node
// over an empty log. The peers are the caller's to fill in; on an error
// nothing is left open.
func freshMember(cfg *Config, lg *zap.Logger, id, clusterID uint64, raftConfig func(uint64, *raft.MemoryStorage) *raft.Config) (*bootstrapped, error) {
	md, err := proto.Marshal(&pb.Metadata{NodeID: proto.Uint64(id), ClusterID: proto.Uint64(clusterID)})
	if err != nil {
		return nil, err
	}
	w, err := wal.Create(lg, cfg.walDir(), md)
	if err != nil {
		return nil, fmt.Errorf("create wal: %w", err)
	}
	if cfg.UnsafeNoFsync {
		w.SetUnsafeNoFsync()
	}
	ms := raft.NewMemoryStorage()
	node, err := raft.NewRawNode(raftConfig(id, ms))
	if err != nil {
		w.Close()
		return nil, err
	}
	return &bootstrapped{
		id: id, clusterID: clusterID, memStorage: ms, node: node,
		storage: &raftStorage{wal: w, snapshotter: snap.New(lg, cfg.snapDir())},
		wal:     walView{dir: cfg.walDir()},
	}, nil
}

func (bs bootstrapper) restartRaft() (*bootstrapped, error) {
	walDir := bs.cfg.walDir()
	walSnaps, err := wal.ValidSnapshotEntries(bs.lg, walDir)
	if err != nil {
		return nil, checkWALReadable(walDir, err)
	}
	ss := snap.New(bs.lg, bs.cfg.snapDir())
	snapshot, err := ss.LoadNewestAvailable(walSnaps)
	if err != nil && !errors.Is(err, snap.ErrNoSnapshot) {
		return nil, err
	}
	if err := checkSnapshotPresent(bs.cfg.snapDir(), walDir, walSnaps, snapshot); err != nil {
		return nil, err
	}
	marker := walpb.Snapshot{}
	if snapshot != nil {
		md := snapshot.GetMetadata()
		marker = walpb.Snapshot{Index: md.GetIndex(), Term: md.GetTerm(), ConfState: md.GetConfState()}
	}
	w, mdBytes, hs, ents, err := openWAL(bs.lg, walDir, marker)
	if err != nil {
		return nil, checkWALReadable(walDir, err)
	}
	if bs.cfg.UnsafeNoFsync {
		w.SetUnsafeNoFsync()
	}
	md := &pb.Metadata{}
	if err := proto.Unmarshal(mdBytes, md); err != nil {
		w.Close()
		return nil, fmt.Errorf("decode wal metadata: %w", err)
	}
	view := walView{dir: walDir, tailPath: w.TailPath(), lastIndex: marker.Index}
	if n := len(ents); n > 0 {
		view.lastIndex = ents[n-1].GetIndex()
	}
	if err := checkCommitInWAL(md.GetNodeID(), view, hs); err != nil {
		w.Close()
		return nil, err
	}
	if bs.cfg.ForceNewCluster {
		if hs, ents, err = bs.forceNewCluster(w, md.GetNodeID(), snapshot, hs, ents); err != nil {
			w.Close()
			return nil, err
		}
	}
	ms := raft.NewMemoryStorage()
	if snapshot != nil {
		if err := ms.ApplySnapshot(snapshot); err != nil {
			return nil, err
		}
	}
	if err := ms.SetHardState(hs); err != nil {
		return nil, err
	}
	if err := ms.Append(ents); err != nil {
		return nil, err
	}
	bs.lg.Info("restarting local member", zap.String("local-member-id", idHex(md.GetNodeID())),
		zap.String("cluster-id", idHex(md.GetClusterID())), zap.Uint64("commit-index", hs.GetCommit()))
	node, err := raft.NewRawNode(bs.raftConfig(md.GetNodeID(), ms))
	if err != nil {
		w.Close()
		return nil, err
	}
	return &bootstrapped{
		id: md.GetNodeID(), clusterID: md.GetClusterID(), memStorage: ms, node: node, snapshot: snapshot,
		storage: &raftStorage{wal: w, snapshotter: ss}, wal: view,
	}, nil
}

// openWAL opens the WAL at the snapshot marker and reads it; a torn last
// record (a crash mid-write) is repaired once, as etcd does.
func openWAL(lg *zap.Logger, dir string, marker walpb.Snapshot) (*wal.WAL, []byte, *raftpb.HardState, []*raftpb.Entry, error) {
	repaired := false
	for {
		w, err := wal.Open(lg, dir, marker)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("open wal: %w", err)
		}
		md, hs, ents, err := w.ReadAll()
		if err == nil {
			return w, md, hs, ents, nil
		}
		w.Close()
		if repaired || !errors.Is(err, wal.ErrUnexpectedEOF) || !wal.Repair(lg, dir) {
			return nil, nil, nil, nil, fmt.Errorf("read wal: %w", err)
		}
		repaired = true
	}
}

// openBackend opens the member's bbolt db with the member's hooks.
func openBackend(c *Config, hooks backendHooks) (backend.Backend, error) {
	start := time.Now()
	be, err := backend.Open(backend.Config{
		Path:          c.backendPath(),
		Logger:        c.Logger,
		UnsafeNoFsync: c.UnsafeNoFsync,
		Mlock:         c.MemoryMlock,
		PreCommit:     hooks.preCommit,
		AwaitDiskGap:  hooks.awaitDiskGap,
	})
	if err != nil {
		return nil, fmt.Errorf("open backend %s: %w", c.backendPath(), err)
	}
	// bbolt creates the file without syncing its directory.
	if err := syncNames(c.backendPath()); err != nil {
		be.Close()
		return nil, fmt.Errorf("sync backend directory: %w", err)
	}
	c.Logger.Info("opened backend db", zap.String("path", c.backendPath()), zap.Duration("took", time.Since(start)))
	return be, nil
}

// maxDiskGapWait bounds how long a bulk sync of the backend waits for the
// WAL's sync in progress (or the next) to end: under a steady write load
// syncs follow each other closely, and the bulk work must still go on.
const maxDiskGapWait = 5 * time.Millisecond

// awaitDiskGap is the backend's AwaitDiskGap; nil without gaps.
func (h backendHooks) awaitDiskGap() {
	h.diskGaps.Await(maxDiskGapWait)
}

// syncNames fsyncs the directory holding each path, so that the paths'
// names are durable.
func syncNames(paths ...string) error {
	for _, p := range paths {
		if err := fileutil.FsyncDir(filepath.Dir(filepath.Clean(p))); err != nil {
			return err
		}
	}
	return nil
}
