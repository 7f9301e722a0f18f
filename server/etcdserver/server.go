package etcdserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/idutil"
	"github.com/cairnkv/cairn/pkg/syncgap"
	"github.com/cairnkv/cairn/pkg/wait"
	"github.com/cairnkv/cairn/server/apply"
	"github.com/cairnkv/cairn/server/compactor"
	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/peer"
	"github.com/cairnkv/cairn/server/raftnode"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// maxApplyBacklog is how far the applied index may trail the committed index
// before new proposals are refused with "too many requests" (etcd's value).
const maxApplyBacklog = 5000

// Server is one running member.
type Server struct {
	cfg *Config
	lg  *zap.Logger

	id, clusterID uint64

	// The stores are replaced when a snapshot from the leader is installed
	// (stores.go says who may use them how).
	stores      *stores
	authAdmin   *AuthAdmin // the Auth service, over the auth store
	gate        *authGate  // who sent a request and what it may do, over the auth store
	kvs         *KVService // the KV and Watch services, over the stores
	versions    *versionKeeper
	leases      *LeaseService    // the Lease service, over the lessor
	memberAdmin *MembershipAdmin // the Cluster service
	maint       *Maintenance     // the Maintenance service
	storage     *raftStorage
	node        *raftnode.Node
	transport   *peer.Transport

	reqIDs      *idutil.Generator
	props       *proposer      // the proposals in flight
	raftView    *raftView      // leadership, configuration, peer connections
	records     memberRecords  // the applied membership in the backend
	removed     removedIDCache // the members_removed bucket, for the peer transport
	appliedWait *wait.Index

	// commits holds the apply lock (applyMu) and the consistent index.
	commits *backendCommits
	// backendHooks go into every backend the member opens (restarts and
	// snapshot installs alike).
	backendHooks backendHooks
	snaps        *snapshotSaver // the raft snapshots, saved in the background
	// snapshotForced asks the apply loop for a snapshot at the end of the
	// batch (after a cluster version downgrade, as etcd, so that the WAL
	// an older binary reads holds no entry of the newer version).
	snapshotForced bool

	appliedIndex atomic.Uint64
	// snapshotsInstalled counts snapshots from the leader installed since
	// start: a proposal of this member's that such a snapshot already
	// holds is never answered (publish looks for that).
	snapshotsInstalled atomic.Uint64

	reads *readBarrier

	corruption    *corruptionChecker   // the corruption checks (corrupt.go)
	autoCompactor *compactor.Compactor // nil: auto compaction is off

	readyc   chan struct{}
	stopOnce sync.Once
	stopc    chan struct{}
	wg       sync.WaitGroup
	errc     chan error
}

// New opens (or creates) the member's data and prepares it to start.
func New(cfg *Config) (*Server, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: c, lg: c.Logger, stopc: make(chan struct{}), errc: make(chan error, 1), readyc: make(chan struct{})}
	s.stores = &stores{applied: &s.appliedIndex, lg: s.lg}
	s.commits = &backendCommits{stores: s.stores, kick: make(chan struct{}, 1), interval: c.BackendBatchInterval, stop: s.stopc}
	s.backendHooks = backendHooks{preCommit: s.commits.saveConsistentIndex, diskGaps: syncgap.New()}
	early := prefetchKV(c, s.backendHooks)
	b, err := bootstrapper{cfg: c, lg: s.lg}.bootstrapRaft()
	if err != nil {
		early.discard()
		return nil, err
	}
	b.storage.wal.ReportSyncsTo(s.backendHooks.diskGaps)
	// openStores may finish installing a snapshot, through the storage.
	s.id, s.clusterID, s.storage = b.id, b.clusterID, b.storage
	s.snaps = &snapshotSaver{lg: s.lg, log: b.memStorage, files: b.storage,
		catchUp: c.SnapshotCatchUpEntries, run: s.goAttach, fail: s.fail}
	s.gate = &authGate{certAuth: c.ClientCertAuth} // its store comes with the stores
	s.reqIDs = idutil.NewGenerator(uint16(b.id), time.Now())
	s.props = newProposer(b.id, c, s.gate, &s.appliedIndex, s.reqIDs, s.stopc)
	s.raftView = &raftView{self: b.id, stop: s.stopc, lg: s.lg, tick: c.tickInterval(), now: time.Now}
	s.kvs = &KVService{self: b.id, member: s.view(), stores: s.stores, auth: s.gate, stop: s.stopc}
	s.versions = &versionKeeper{self: b.id, member: s.view(), peers: c.peerHTTP, lg: s.lg, stop: s.stopc,
		timing: versionTiming{monitor: c.versionMonitorInterval(), downgradeCheck: c.DowngradeCheckTime, request: c.requestTimeout()}}
	s.leases = newLeaseService(c, s.view(), s.gate, s.reqIDs, s.stopc) // before the stores: it opens the lessor
	s.memberAdmin = newMembershipAdmin(c, b.id, s.view(), s.reqIDs)
	if err := s.openStores(b, early); err != nil {
		b.storage.Close()
		return nil, err
	}
	s.appliedWait = wait.NewIndex(s.commits.index)
	s.raftView.applied = s.appliedWait
	s.appliedIndex.Store(s.commits.index)
	s.corruption = &corruptionChecker{lg: s.lg, src: memberHashes{s: s, peers: &hashFetcher{
		self: b.id, clusterID: b.clusterID, members: s.stores.members, http: c.peerHTTP,
		timeout: c.requestTimeout(), stop: s.stopc, lg: s.lg,
	}}}
	if b.snapshot != nil {
		s.snaps.installed(b.snapshot.GetMetadata().GetIndex())
		s.raftView.setConfState(b.snapshot.GetMetadata().GetConfState())
	}
	// The raft node comes after its transport: the parts that talk to the
	// node or the transport get them once both exist. Nothing serves the
	// peer URLs and no loop runs before New returns.
	rp := &raftPeer{removed: s.isIDRemoved, withApplyLock: s.commits.withApplyLock, dbs: s.storage.snapshotter}
	if s.transport, err = newTransport(c, b.id, b.clusterID, rp); err != nil {
		s.stores.close()
		b.storage.Close()
		return nil, err
	}
	s.node = raftnode.New(raftnode.Config{
		ID: b.id, Logger: s.lg, RawNode: b.node, MemStorage: b.memStorage,
		Persister: b.storage, Transport: s.transport, TickInterval: c.tickInterval(),
	})
	rp.node = s.node
	s.props.node, s.props.links = s.node, s.transport
	s.raftView.node, s.raftView.links = s.node, s.transport
	s.records = memberRecords{self: b.id, peers: s.transport, lg: s.lg}
	s.maint = newMaintenance(c, b.id, s.view(), s.node, s.versions, s.stopc)
	s.reads = newReadBarrier(c, s.node, s.appliedWait, s.reqIDs, s.stopc)
	s.connectPeers(append(b.peers, s.stores.members()...))
	lastIndex, err := b.memStorage.LastIndex()
	if err != nil {
		return nil, err
	}
	s.node.SetLastPersisted(lastIndex)
	if s.autoCompactor, err = newAutoCompactor(c, s.kvs, s.stores.currentRev); err != nil {
		s.transport.Stop()
		s.stores.close()
		b.storage.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) openStores(b *bootstrapped, early *kvFuture) error {
	if err := s.finishStores(early.wait()); err != nil {
		return err
	}
	// Before anything writes to the backend, bootstrap defrag included.
	if err := checkBackendNotAheadOfWAL(b.id, s.cfg.backendPath(), b.wal, s.commits.index); err != nil {
		s.stores.close()
		return err
	}
	if err := defragAtStart(s.stores.be, s.cfg.BootstrapDefragThresholdMegabytes, s.lg); err != nil {
		s.stores.close()
		return err
	}
	if b.snapshot == nil || s.commits.index >= b.snapshot.GetMetadata().GetIndex() {
		return nil
	}
	// The member crashed between persisting a snapshot from the leader and
	// installing its db: finish the install now.
	index := b.snapshot.GetMetadata().GetIndex()
	s.stores.close()
	if err := s.storage.moveSnapshotDB(index, s.cfg.backendPath()); err != nil {
		return fmt.Errorf("the backend's consistent index is older than snapshot %d and its db cannot be installed: %w", index, err)
	}
	return s.openBackendStores()
}

// openBackendStores opens the backend, mvcc and applier on the db file and
// reads the consistent index it holds.
func (s *Server) openBackendStores() error {
	return s.finishStores(openKV(s.cfg, s.backendHooks))
}

// finishStores opens auth, the lessor and the applier on an opened backend
// and mvcc store, and makes them the member's stores.
func (s *Server) finishStores(opened openedKV) error {
	if opened.err != nil {
		return opened.err
	}
	be, kv := opened.be, opened.kv
	tx := be.ReadTx()
	tx.RLock()
	ci, _ := backend.ReadUint64(tx, backend.BucketMeta, backend.MetaConsistentIndex)
	term, _ := backend.ReadUint64(tx, backend.BucketMeta, backend.MetaTerm)
	tx.RUnlock()
	if err := s.openAuth(be); err != nil {
		kv.Close()
		be.Close()
		return err
	}
	lessor, err := s.leases.openLessor(be, kv)
	if err != nil {
		kv.Close()
		be.Close()
		return err
	}
	applier, err := apply.New(apply.Config{KV: kv, Backend: be, QuotaBackendBytes: s.cfg.QuotaBackendBytes, Lessor: lessor, Auth: s.stores.auth, Logger: s.lg})
	if err != nil {
		lessor.Stop()
		kv.Close()
		be.Close()
		return err
	}
	// The scans above read the whole db; serving needs few of its pages.
	be.DropResidentPages()
	s.stores.be, s.stores.kv, s.stores.lessor, s.stores.applier = be, kv, lessor, applier
	s.commits.index, s.commits.term = ci, term
	return nil
}

// Start runs the raft, apply, commit and read loops. A one-member cluster
// campaigns at once instead of waiting out an election timeout.
func (s *Server) Start() {
	// Decided before any loop runs: the apply loop rewrites confState.
	singleVoter := s.raftView.isSingleVoter(s.cfg.ForceNewCluster && s.cfg.HasWAL(), len(s.cfg.InitialCluster))
	s.exportMetrics()
	s.node.Start()
	s.goAttach(s.applyLoop)
	s.goAttach(s.commits.run)
	s.goAttach(s.reads.run)
	s.goAttach(func() { s.cfg.filePurger(s.lg).run(s.stopc) })
	s.goAttach(s.watchRaftErrors)
	s.goAttach(newPublisher(s.cfg, s.id, s.view(), &s.snapshotsInstalled, s.readyc, s.stopc).run)
	s.goAttach(func() { s.versions.monitorVersions(s.readyc) })
	s.goAttach(s.versions.monitorDowngrade)
	s.goAttach(s.leases.leadershipLoop)
	s.goAttach(s.leases.revokeExpiredLoop)
	if s.cfg.learnerLoopEnabled() {
		s.goAttach(newLearnerSteward(s.cfg, s.id, stewardMember{s.view(), s.memberAdmin}, s.stopc).run)
	}
	s.goAttach(func() { s.corruption.runPeriodicCheck(s.cfg.CorruptCheckTime, s.raftView.leads, s.stopc) })
	if s.cfg.CompactHashCheck {
		s.goAttach(func() { s.corruption.runCompactHashCheck(s.cfg.compactHashCheckTime(), s.raftView.leads, s.stopc) })
	}
	s.goAttach(func() { runWhileLeading(s.autoCompactor, s.raftView, s.stopc) })
	s.goAttach(s.maint.autoDefragLoop)
	if singleVoter {
		s.goAttach(s.raftView.campaignWhenApplied)
	}
}

func (s *Server) goAttach(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// Errors reports a fatal error after which the member has stopped serving.
func (s *Server) Errors() <-chan error { return s.errc }

func (s *Server) watchRaftErrors() {
	select {
	case err := <-s.node.Errors():
		s.fail(err)
	case err := <-s.transport.Errors():
		s.fail(err)
	case <-s.stopc:
	}
}

// Stop stops every loop, commits the backend and closes the files.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.maint.HandOverLeadership()
		close(s.stopc)
		s.wg.Wait()
		s.props.stopAll()
		s.transport.Stop()
		s.node.Stop()
		s.commits.mu.Lock()
		s.stores.mu.Lock()
		s.stores.be.Commit()
		leased := leasedKeys(s.stores.lessor)
		s.stores.close()
		s.stores.writeIndexCheckpoint(s.cfg, leased)
		s.stores.closed = true
		s.stores.mu.Unlock()
		s.commits.mu.Unlock()
		s.storage.Close()
	})
}

// StopNotify is closed when Stop begins.
func (s *Server) StopNotify() <-chan struct{} { return s.stopc }

// ID is this member's ID.
func (s *Server) ID() uint64 { return s.id }

// ClusterID is the cluster's ID.
func (s *Server) ClusterID() uint64 { return s.clusterID }

// Leader is the current leader's ID (0 = none known).
func (s *Server) Leader() uint64 { return s.node.Leader() }

// Header is the response header for the member's current state.
func (s *Server) Header() *pb.ResponseHeader {
	return &pb.ResponseHeader{ClusterId: s.clusterID, MemberId: s.id, Revision: s.stores.currentRev(), RaftTerm: s.node.Term()}
}

// fillHeader completes, in place, a header the applier started (it knows
// only the revision; every answer of the apply package carries one).
func (s *Server) fillHeader(h *pb.ResponseHeader) {
	if h == nil {
		return // a response the applier left without one: v3rpc adds it (completeHeader)
	}
	h.ClusterId, h.MemberId, h.RaftTerm = s.clusterID, s.id, s.node.Term()
}

// LinearizableReadCheck passes a read barrier, as /health does.
func (s *Server) LinearizableReadCheck(ctx context.Context) error {
	return s.linearizableReadNotify(ctx)
}

// SerializableReadCheck reads the local store, as /health?serializable=true does.
func (s *Server) SerializableReadCheck(ctx context.Context) error {
	_, err := s.stores.rangeLocal(ctx, &pb.RangeRequest{Key: []byte("health"), Serializable: true})
	return err
}

// IsLearner reports whether this member is a learner.
func (s *Server) IsLearner() bool { return s.raftView.isLearner() }

func newLearnerSteward(c *Config, self uint64, member learnerMember, stop <-chan struct{}) *learnerSteward {
	return &learnerSteward{self: self, member: member, peers: c.peerHTTP, lg: c.Logger, stop: stop,
		timing: learnerTiming{promoteAfter: c.autoPromoteAfter(), failoverAfter: c.StandbyFailoverAfter,
			interval: c.autoPromoteInterval(), autoPromote: c.autoPromoteEnabled()}}
}

// Maintenance serves the Maintenance service.
func (s *Server) Maintenance() *Maintenance { return s.maint }

// MembershipAdmin serves the Cluster service.
func (s *Server) MembershipAdmin() *MembershipAdmin { return s.memberAdmin }

// KV serves the KV service and the member's side of the Watch service.
func (s *Server) KV() *KVService { return s.kvs }

// LeaseService serves the Lease service.
func (s *Server) LeaseService() *LeaseService { return s.leases }

// ClusterVersion is the cluster version as "X.Y.0", or "" while undecided.
func (s *Server) ClusterVersion() string { return s.versions.clusterVersion() }

// StorageVersion is the backend's storage version as "X.Y.0", or "" while
// it has none.
func (s *Server) StorageVersion() string { return s.versions.storageVersion() }

// Alarms are the active alarms (/health and /readyz report them).
func (s *Server) Alarms() []*pb.AlarmMember { return s.stores.alarms() }

func jsonMember(m *membership.Member) ([]byte, error) { return json.Marshal(m) }

func idHex(id uint64) string { return strconv.FormatUint(id, 16) }
