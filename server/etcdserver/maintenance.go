package etcdserver

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// serverVersion is the etcd version this member reports.
const serverVersion = "3.7.1"

// maintenanceMember is what Maintenance needs from the member it serves.
// The stores belong to the member (a snapshot install replaces them), so
// Maintenance reaches them only through these calls, each of which holds
// the member's lock for as long as it runs.
type maintenanceMember interface {
	RaftStatus() (raft.Status, error)
	Leader() uint64
	leads() bool
	IsLearner() bool
	members() []*membership.Member
	connectedSince(id uint64) time.Time
	Header() *pb.ResponseHeader
	fillHeader(h *pb.ResponseHeader)
	proposeRequest(ctx context.Context, r *pb.InternalRaftRequest) (proto.Message, error)
	// storeStatus reads Status's store fields under one store lock.
	storeStatus() (storeStatus, bool)
	// backend is the current backend; false once the member stopped.
	backend() (backend.Backend, bool)
	// withApplyLock runs f on the backend with no entry being applied and
	// no commit running (applyMu).
	withApplyLock(f func(be backend.Backend))
	hashByRev(rev int64) (mvcc.KeyValueHash, int64, error)
}

// leadershipMover is the raft node's part in MoveLeader.
type leadershipMover interface {
	Started() bool
	TransferLeadership(ctx context.Context, transferee uint64) error
}

// downgrades is the versionKeeper's part in Maintenance.
type downgrades interface {
	downgrade() downgradeInfo
	Downgrade(ctx context.Context, r *pb.DowngradeRequest) (*pb.DowngradeResponse, error)
}

// storeStatus is what Status reports about the stores.
type storeStatus struct {
	dbSize, dbSizeInUse, quotaBytes int64
	storageVersion                  string
	alarms                          []*pb.AlarmMember
	appliedIndex                    uint64
}

// Maintenance serves etcd's Maintenance service on a member (status,
// hashes, defragmentation, snapshot, alarms, leader moves, downgrade) and
// runs the automatic defragmentation (autodefrag.go).
type Maintenance struct {
	self     uint64
	member   maintenanceMember
	node     leadershipMover
	versions downgrades
	lg       *zap.Logger
	stop     <-chan struct{}
	tick     time.Duration // how often MoveLeader looks for the new leader
	request  time.Duration // bound of the leader hand-over at stop
	reclaim  reclaimPolicy

	// watchersMu guards defragWatchers: callbacks around every defrag the
	// member starts by itself (v3rpc's gRPC health service registers one,
	// so that StopGRPCServiceOnDefrag covers automatic defrags too).
	watchersMu     sync.Mutex
	defragWatchers []DefragWatcher
}

// DefragWatcher is told when a defrag that no client asked for starts and
// ends (those that a client asked for, its handler sees itself).
// It is an alias so that v3rpc can name the same method set without
// importing this package.
type DefragWatcher = interface {
	DefragStarted()
	DefragFinished()
}

// WatchAutoDefrags adds w to the watchers of automatic defrags.
func (m *Maintenance) WatchAutoDefrags(w DefragWatcher) {
	m.watchersMu.Lock()
	defer m.watchersMu.Unlock()
	m.defragWatchers = append(m.defragWatchers, w)
}

// announceDefrag calls every watcher's DefragStarted and returns what ends it.
func (m *Maintenance) announceDefrag() (finished func()) {
	m.watchersMu.Lock()
	ws := slices.Clone(m.defragWatchers)
	m.watchersMu.Unlock()
	for _, w := range ws {
		w.DefragStarted()
	}
	return func() {
		for _, w := range ws {
			w.DefragFinished()
		}
	}
}

func newMaintenance(c *Config, self uint64, member maintenanceMember, node leadershipMover, versions downgrades, stop <-chan struct{}) *Maintenance {
	return &Maintenance{self: self, member: member, node: node, versions: versions, lg: c.Logger, stop: stop,
		tick: c.tickInterval(), request: c.requestTimeout(),
		reclaim: reclaimPolicy{freePercent: c.AutoDefragFreePercent, minFree: c.AutoDefragMinFreeBytes, interval: c.AutoDefragInterval}}
}

// Status reports the member's state as Maintenance.Status does.
func (m *Maintenance) Status(ctx context.Context) (*pb.StatusResponse, error) {
	st, err := m.member.RaftStatus()
	if err != nil {
		return nil, errs.ErrStopped
	}
	hdr := m.member.Header()
	downgrade := m.versions.downgrade()
	ss, ok := m.member.storeStatus()
	if !ok {
		return nil, errs.ErrStopped
	}
	resp := &pb.StatusResponse{
		Header:           hdr,
		Version:          serverVersion,
		DbSize:           ss.dbSize,
		DbSizeInUse:      ss.dbSizeInUse,
		Leader:           st.Lead,
		RaftIndex:        st.GetCommit(),
		RaftTerm:         st.GetTerm(),
		RaftAppliedIndex: ss.appliedIndex,
		IsLearner:        m.member.IsLearner(),
		DbSizeQuota:      ss.quotaBytes,
		StorageVersion:   ss.storageVersion,
		// etcd always sends it, empty while no downgrade is in progress.
		DowngradeInfo: &pb.DowngradeInfo{TargetVersion: downgrade.TargetVersion, Enabled: downgrade.Enabled},
	}
	for _, a := range ss.alarms {
		resp.Errors = append(resp.Errors, a.String())
	}
	return resp, nil
}

// hashIgnores leaves out of Hash what legitimately differs between members
// holding the same data: the raft bookkeeping in the meta bucket.
func hashIgnores(bucket, key []byte) bool {
	if !bytes.Equal(bucket, backend.BucketMeta) {
		return false
	}
	return bytes.Equal(key, backend.MetaConsistentIndex) || bytes.Equal(key, backend.MetaTerm) ||
		bytes.Equal(key, backend.MetaConfState)
}

// Hash hashes the whole backend.
func (m *Maintenance) Hash(ctx context.Context) (*pb.HashResponse, error) {
	hdr := m.member.Header()
	var h uint32
	var err error
	m.member.withApplyLock(func(be backend.Backend) { h, err = be.Hash(hashIgnores) })
	if err != nil {
		return nil, err
	}
	return &pb.HashResponse{Header: hdr, Hash: h}, nil
}

// HashKV hashes the key space up to rev (0 = current).
func (m *Maintenance) HashKV(ctx context.Context, rev int64) (*pb.HashKVResponse, error) {
	h, current, err := m.member.hashByRev(rev)
	if err != nil {
		return nil, err
	}
	hdr := m.member.Header()
	hdr.Revision = current
	return &pb.HashKVResponse{Header: hdr, Hash: h.Hash, CompactRevision: h.CompactRevision, HashRevision: h.Revision}, nil
}

// Defragment rewrites the backend file online: applies, reads and
// snapshots go on while it copies, and wait only for its short final swap.
// Holding applyMu is not needed: the backend's new file only ever holds
// states the member committed (under applyMu), consistent index included.
func (m *Maintenance) Defragment(ctx context.Context) error {
	be, ok := m.member.backend()
	if !ok {
		return errs.ErrStopped
	}
	return m.defrag(be)
}

// defrag commits what the member has applied, under applyMu as every
// commit must be, and then defragments online: the copy then starts from
// the newest state, so deletes and a compaction just applied give their
// space back in this defrag rather than the next (Defrag itself never
// commits, see backend/defrag.go).
func (m *Maintenance) defrag(be backend.Backend) error {
	m.member.withApplyLock(func(be backend.Backend) { be.Commit() })
	return be.Defrag()
}

// Snapshot returns a consistent copy of the backend.
func (m *Maintenance) Snapshot(ctx context.Context) (backend.Snapshot, error) {
	var snap backend.Snapshot
	m.member.withApplyLock(func(be backend.Backend) { snap = be.Snapshot() })
	return snap, nil
}

// Alarm proposes an alarm change (or read) through raft.
func (m *Maintenance) Alarm(ctx context.Context, r *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	return proposeAnswer[*pb.AlarmResponse](ctx, m.member, &pb.InternalRaftRequest{Alarm: r})
}

// Downgrade serves Maintenance.Downgrade (downgrade.go).
func (m *Maintenance) Downgrade(ctx context.Context, r *pb.DowngradeRequest) (*pb.DowngradeResponse, error) {
	return m.versions.Downgrade(ctx, r)
}

// MoveLeader hands leadership to another voting member and waits until it
// has taken over.
func (m *Maintenance) MoveLeader(ctx context.Context, r *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	if !m.member.leads() {
		return nil, errs.ErrNotLeader
	}
	target := r.GetTargetID()
	if !m.isVoter(target) {
		return nil, errs.ErrBadLeaderTransferee
	}
	if err := m.node.TransferLeadership(ctx, target); err != nil {
		return nil, errs.ErrTimeoutLeaderTransfer
	}
	tick := time.NewTicker(m.tick)
	defer tick.Stop()
	for m.member.Leader() != target {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, errs.ErrTimeoutLeaderTransfer
		case <-m.stop:
			return nil, errs.ErrStopped
		}
	}
	return &pb.MoveLeaderResponse{}, nil
}

// HandOverLeadership moves leadership to the voter that has been connected
// longest before a leader stops, so the cluster does not wait out an
// election timeout (as etcd does on a graceful stop).
func (m *Maintenance) HandOverLeadership() {
	if !m.node.Started() || !m.member.leads() {
		return
	}
	st, err := m.member.RaftStatus()
	if err != nil {
		return
	}
	var target uint64
	var since time.Time
	for id := range st.Config.Voters.IDs() {
		if id == m.self {
			continue
		}
		if t := m.member.connectedSince(id); !t.IsZero() && (target == 0 || t.Before(since)) {
			target, since = id, t
		}
	}
	if target == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.request)
	defer cancel()
	m.lg.Info("leader is stopping; transferring leadership", zap.String("transferee", idHex(target)))
	if _, err := m.MoveLeader(ctx, &pb.MoveLeaderRequest{TargetID: target}); err != nil {
		m.lg.Warn("leadership transfer failed", zap.String("transferee", idHex(target)), zap.Error(err))
		return
	}
	m.lg.Info("leadership transferred", zap.String("transferee", idHex(target)))
}

func (m *Maintenance) isVoter(id uint64) bool {
	st, err := m.member.RaftStatus()
	if err != nil {
		return false
	}
	_, ok := st.Config.Voters.IDs()[id]
	return ok
}
