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
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/idutil"
	"github.com/cairnkv/cairn/pkg/wait"
	"github.com/cairnkv/cairn/server/apply"
	"github.com/cairnkv/cairn/server/auth"
	"github.com/cairnkv/cairn/server/compactor"
	"github.com/cairnkv/cairn/server/lease"
	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/metrics"
	"github.com/cairnkv/cairn/server/peer"
	"github.com/cairnkv/cairn/server/raftnode"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// maxApplyBacklog is how far the applied index may trail the committed index
// before new proposals are refused with "too many requests" (etcd's value).
const maxApplyBacklog = 5000

// Server is one running member.
type Server struct {
	cfg *Config
	lg  *zap.Logger

	id, clusterID uint64

	// The stores are replaced when a snapshot from the leader is installed.
	// The apply loop uses them freely (installs happen on it, under
	// applyMu); every other goroutine holds storeMu.RLock while it uses them.
	storeMu      sync.RWMutex
	storesClosed bool // set by Stop under storeMu
	be           backend.Backend
	kv           *mvcc.Store
	lessor       *lease.Lessor
	applier      *apply.Applier
	authStore    *auth.Store // lives across stores; Recover hands it a new backend
	authAdmin    *AuthAdmin  // the Auth service, over authStore
	gate         *authGate   // who sent a request and what it may do, over authStore
	versions     *versionKeeper
	leases       *LeaseService    // the Lease service, over lessor
	memberAdmin  *MembershipAdmin // the Cluster service
	maint        *Maintenance     // the Maintenance service
	watches      watchStreams     // the open watch streams of kv
	storage      *raftStorage
	node         *raftnode.Node
	transport    *peer.Transport

	reqIDs      *idutil.Generator
	proposals   *wait.Registry
	localReqs   *localRequests // proposed here, not yet applied
	appliedWait *wait.Index

	// applyMu is held while an entry is applied and while the backend
	// commits, so a commit never separates data from its consistent index.
	applyMu        sync.Mutex
	consistentIdx  uint64 // guarded by applyMu
	consistentTerm uint64 // guarded by applyMu
	// commitKick asks commitLoop for a commit now (the batch limit was
	// reached); capacity 1, a pending kick is enough.
	commitKick    chan struct{}
	confState     *raftpb.ConfState
	snapshotIndex uint64
	// snapshotForced asks the apply loop for a snapshot at the end of the
	// batch (after a cluster version downgrade, as etcd, so that the WAL
	// an older binary reads holds no entry of the newer version).
	snapshotForced bool

	appliedIndex atomic.Uint64
	// snapshotsInstalled counts snapshots from the leader installed since
	// start: a proposal of this member's that such a snapshot already
	// holds is never answered (publish looks for that).
	snapshotsInstalled atomic.Uint64
	isLearner          atomic.Bool // this member is a learner in the current configuration

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
	s := &Server{cfg: c, lg: c.Logger, stopc: make(chan struct{}), errc: make(chan error, 1), readyc: make(chan struct{}), commitKick: make(chan struct{}, 1)}
	b, err := bootstrapper{cfg: c, lg: s.lg}.bootstrapRaft()
	if err != nil {
		return nil, err
	}
	// openStores may finish installing a snapshot, through the storage.
	s.id, s.clusterID, s.storage = b.id, b.clusterID, b.storage
	s.versions = &versionKeeper{self: b.id, member: s, peers: c.peerHTTP, lg: s.lg, stop: s.stopc,
		timing: versionTiming{monitor: c.versionMonitorInterval(), downgradeCheck: c.DowngradeCheckTime, request: c.requestTimeout()}}
	s.reqIDs = idutil.NewGenerator(uint16(b.id), time.Now())
	s.gate = &authGate{certAuth: c.ClientCertAuth} // its store comes with the stores
	s.leases = s.newLeaseService()                 // before the stores: it opens the lessor
	s.memberAdmin = s.newMembershipAdmin()
	if err := s.openStores(b); err != nil {
		b.storage.Close()
		return nil, err
	}
	s.proposals = wait.NewRegistry()
	s.localReqs = newLocalRequests()
	s.appliedWait = wait.NewIndex(s.consistentIdx)
	s.appliedIndex.Store(s.consistentIdx)
	s.corruption = &corruptionChecker{lg: s.lg, src: memberHashes{s: s, peers: &hashFetcher{
		self: b.id, clusterID: b.clusterID, members: s.members, http: c.peerHTTP,
		timeout: c.requestTimeout(), stop: s.stopc, lg: s.lg,
	}}}
	if b.snapshot != nil {
		s.snapshotIndex = b.snapshot.GetMetadata().GetIndex()
		s.setConfState(b.snapshot.GetMetadata().GetConfState())
	}
	if s.transport, err = s.newTransport(); err != nil {
		s.closeBackendStores()
		b.storage.Close()
		return nil, err
	}
	s.node = raftnode.New(raftnode.Config{
		ID: b.id, Logger: s.lg, RawNode: b.node, MemStorage: b.memStorage,
		Persister: b.storage, Transport: s.transport, TickInterval: c.tickInterval(),
	})
	s.maint = s.newMaintenance()
	s.reads = s.newReadBarrier()
	s.connectPeers(append(b.peers, s.members()...))
	lastIndex, err := b.memStorage.LastIndex()
	if err != nil {
		return nil, err
	}
	s.node.SetLastPersisted(lastIndex)
	if s.autoCompactor, err = s.newAutoCompactor(); err != nil {
		s.transport.Stop()
		s.closeBackendStores()
		b.storage.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) openStores(b *bootstrapped) error {
	if err := s.openBackendStores(); err != nil {
		return err
	}
	// Before anything writes to the backend, bootstrap defrag included.
	if err := checkBackendNotAheadOfWAL(b.id, s.cfg.backendPath(), b.wal, s.consistentIdx); err != nil {
		s.closeBackendStores()
		return err
	}
	if err := defragAtStart(s.be, s.cfg.BootstrapDefragThresholdMegabytes, s.lg); err != nil {
		s.closeBackendStores()
		return err
	}
	if b.snapshot == nil || s.consistentIdx >= b.snapshot.GetMetadata().GetIndex() {
		return nil
	}
	// The member crashed between persisting a snapshot from the leader and
	// installing its db: finish the install now.
	index := b.snapshot.GetMetadata().GetIndex()
	s.closeBackendStores()
	if err := s.moveSnapshotDB(index); err != nil {
		return fmt.Errorf("the backend's consistent index is older than snapshot %d and its db cannot be installed: %w", index, err)
	}
	return s.openBackendStores()
}

// openBackendStores opens the backend, mvcc and applier on the db file and
// reads the consistent index it holds.
func (s *Server) openBackendStores() error {
	be, err := s.openBackend()
	if err != nil {
		return err
	}
	tx := be.ReadTx()
	tx.RLock()
	ci, _ := backend.ReadUint64(tx, backend.BucketMeta, backend.MetaConsistentIndex)
	term, _ := backend.ReadUint64(tx, backend.BucketMeta, backend.MetaTerm)
	tx.RUnlock()
	if err := s.openAuth(be); err != nil {
		be.Close()
		return err
	}
	kv := mvcc.New(s.lg, be, mvcc.StoreConfig{
		CompactionBatchLimit:    s.cfg.CompactionBatchLimit,
		CompactionSleepInterval: s.cfg.CompactionSleepInterval,
		IndexCheckpoint:         s.cfg.indexCheckpointPath(),
	})
	lessor, err := s.leases.openLessor(be, kv)
	if err != nil {
		kv.Close()
		be.Close()
		return err
	}
	applier, err := apply.New(apply.Config{KV: kv, Backend: be, QuotaBackendBytes: s.cfg.QuotaBackendBytes, Lessor: lessor, Auth: s.authStore, Logger: s.lg})
	if err != nil {
		lessor.Stop()
		kv.Close()
		be.Close()
		return err
	}
	// The scans above read the whole db; serving needs few of its pages.
	be.DropResidentPages()
	s.be, s.kv, s.lessor, s.applier = be, kv, lessor, applier
	s.consistentIdx, s.consistentTerm = ci, term
	return nil
}

func (s *Server) closeBackendStores() {
	s.watches.closeAll()
	s.lessor.Stop()
	s.kv.Close()
	s.be.Close()
}

// Start runs the raft, apply, commit and read loops. A one-member cluster
// campaigns at once instead of waiting out an election timeout.
func (s *Server) Start() {
	// Decided before any loop runs: the apply loop rewrites confState.
	singleVoter := s.isSingleVoter()
	s.exportMetrics()
	s.node.Start()
	s.goAttach(s.applyLoop)
	s.goAttach(s.commitLoop)
	s.goAttach(s.reads.run)
	s.goAttach(func() { s.cfg.filePurger(s.lg).run(s.stopc) })
	s.goAttach(s.watchRaftErrors)
	s.goAttach(s.newPublisher().run)
	s.goAttach(func() { s.versions.monitorVersions(s.readyc) })
	s.goAttach(s.versions.monitorDowngrade)
	s.goAttach(s.leases.leadershipLoop)
	s.goAttach(s.leases.revokeExpiredLoop)
	if s.cfg.learnerLoopEnabled() {
		s.goAttach(s.newLearnerSteward().run)
	}
	s.goAttach(func() { s.corruption.runPeriodicCheck(s.cfg.CorruptCheckTime, s.leads, s.stopc) })
	if s.cfg.CompactHashCheck {
		s.goAttach(func() { s.corruption.runCompactHashCheck(s.cfg.compactHashCheckTime(), s.leads, s.stopc) })
	}
	s.goAttach(func() { runWhileLeading(s.autoCompactor, s, s.stopc) })
	s.goAttach(s.maint.autoDefragLoop)
	if singleVoter {
		s.goAttach(s.campaignWhenApplied)
	}
}

// campaignWhenApplied starts an election once every entry committed before
// the start is applied: raft refuses to campaign while committed conf changes
// are unapplied, and a lone voter has nobody else to start one.
func (s *Server) campaignWhenApplied() {
	st, err := s.node.Status()
	if err != nil {
		return
	}
	select {
	case <-s.appliedWait.Wait(st.GetCommit()):
	case <-s.stopc:
		return
	}
	if err := s.node.Campaign(context.Background()); err != nil {
		s.lg.Warn("campaign failed", zap.Error(err))
	}
}

func (s *Server) isSingleVoter() bool {
	if s.cfg.ForceNewCluster && s.cfg.HasWAL() {
		return true // every other member is removed by committed entries
	}
	if s.confState != nil {
		return len(s.confState.GetVoters()) == 1 && s.confState.GetVoters()[0] == s.id
	}
	return len(s.cfg.InitialCluster) == 1
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
		s.proposals.TriggerAll(nil)
		s.transport.Stop()
		s.node.Stop()
		s.applyMu.Lock()
		s.storeMu.Lock()
		s.be.Commit()
		leased := leasedKeys(s.lessor)
		s.closeBackendStores()
		s.writeIndexCheckpoint(leased)
		s.storesClosed = true
		s.storeMu.Unlock()
		s.applyMu.Unlock()
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
	return &pb.ResponseHeader{ClusterId: s.clusterID, MemberId: s.id, Revision: s.currentRev(), RaftTerm: s.node.Term()}
}

// setConfState records raft's configuration (apply loop or start only).
func (s *Server) setConfState(cs *raftpb.ConfState) {
	s.confState = cs
	learner := false
	for _, id := range cs.GetLearners() {
		learner = learner || id == s.id
	}
	s.isLearner.Store(learner)
	metrics.SetLearner(learner)
}

// IsLearner reports whether this member is a learner.
func (s *Server) IsLearner() bool { return s.isLearner.Load() }

// rlockStores read-locks the stores; false (and no lock held) once Stop has
// closed them.
func (s *Server) rlockStores() bool {
	s.storeMu.RLock()
	if s.storesClosed {
		s.storeMu.RUnlock()
		return false
	}
	return true
}

// currentLessor is the lessor of the current stores.
func (s *Server) currentLessor() *lease.Lessor {
	s.storeMu.RLock()
	defer s.storeMu.RUnlock()
	return s.lessor
}

// backend returns the current backend; a snapshot install may replace it
// later (and close this one, which ends a defrag running on it).
func (s *Server) backend() (backend.Backend, bool) {
	if !s.rlockStores() {
		return nil, false
	}
	defer s.storeMu.RUnlock()
	return s.be, true
}

// storeStatus reads what Status reports of the stores, all under one lock.
func (s *Server) storeStatus() (storeStatus, bool) {
	if !s.rlockStores() {
		return storeStatus{}, false
	}
	defer s.storeMu.RUnlock()
	return storeStatus{
		dbSize: s.be.Size(), dbSizeInUse: s.be.SizeInUse(), quotaBytes: s.applier.QuotaBytes(),
		storageVersion: storageVersionOf(s.be), alarms: s.applier.Alarms(), appliedIndex: s.appliedIndex.Load(),
	}, true
}

// withApplyLock runs f on the backend while no entry is applied and no
// commit runs.
func (s *Server) withApplyLock(f func(be backend.Backend)) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	f(s.be)
}

// withStores runs read on the backend while the stores are held against a
// snapshot install; false when they are closed.
func (s *Server) withStores(read func(be backend.Backend)) bool {
	if !s.rlockStores() {
		return false
	}
	defer s.storeMu.RUnlock()
	read(s.be)
	return true
}

// connectedSince is when the peer connection to member id last came up;
// zero while it is down.
func (s *Server) connectedSince(id uint64) time.Time { return s.transport.ActiveSince(id) }

func (s *Server) newLearnerSteward() *learnerSteward {
	return &learnerSteward{self: s.id, member: stewardMember{s, s.memberAdmin}, peers: s.cfg.peerHTTP, lg: s.lg, stop: s.stopc,
		timing: learnerTiming{promoteAfter: s.cfg.autoPromoteAfter(), failoverAfter: s.cfg.StandbyFailoverAfter,
			interval: s.cfg.autoPromoteInterval(), autoPromote: s.cfg.autoPromoteEnabled()}}
}

// Maintenance serves the Maintenance service.
func (s *Server) Maintenance() *Maintenance { return s.maint }

// MembershipAdmin serves the Cluster service.
func (s *Server) MembershipAdmin() *MembershipAdmin { return s.memberAdmin }

// LeaseService serves the Lease service.
func (s *Server) LeaseService() *LeaseService { return s.leases }

// leads reports whether this member is the raft leader now.
func (s *Server) leads() bool { return s.Leader() == s.id }

// leaderChanged is closed at the next change of leader.
func (s *Server) leaderChanged() <-chan struct{} { return s.node.LeaderChanged() }

// ClusterVersion is the cluster version as "X.Y.0", or "" while undecided.
func (s *Server) ClusterVersion() string { return s.versions.clusterVersion() }

// StorageVersion is the backend's storage version as "X.Y.0", or "" while
// it has none.
func (s *Server) StorageVersion() string { return s.versions.storageVersion() }

// currentRev is the store's revision.
func (s *Server) currentRev() int64 {
	if !s.rlockStores() {
		return 0
	}
	defer s.storeMu.RUnlock()
	return s.kv.Rev()
}

// Alarms are the active alarms.
func (s *Server) Alarms() []*pb.AlarmMember {
	if !s.rlockStores() {
		return nil
	}
	defer s.storeMu.RUnlock()
	return s.applier.Alarms()
}

// saveConsistentIndex is the backend's pre-commit hook; it runs inside
// Backend.Commit, which this package calls only under applyMu.
func (s *Server) saveConsistentIndex(tx backend.UnsafeWriter) {
	backend.PutUint64(tx, backend.BucketMeta, backend.MetaConsistentIndex, s.consistentIdx)
	backend.PutUint64(tx, backend.BucketMeta, backend.MetaTerm, s.consistentTerm)
}

// commitLoop commits the backend every --backend-batch-interval, and at
// once when the batch limit is reached (kickCommit). Its commits hold applyMu only for the cut.
func (s *Server) commitLoop() {
	t := time.NewTicker(s.cfg.BackendBatchInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.commitInBackground()
		case <-s.commitKick:
			s.commitInBackground()
		case <-s.stopc:
			return
		}
	}
}

// commitInBackground cuts a commit under applyMu, so that the consistent
// index it stores describes exactly the entries applied, then waits until
// it is durable without applyMu: entries go on being applied while bbolt
// writes and fsyncs. Only commitLoop calls it, and every other commit runs
// wholly under applyMu, so the cut never waits for another commit.
func (s *Server) commitInBackground() {
	s.applyMu.Lock()
	if s.be.PendingWrites() == 0 {
		s.applyMu.Unlock()
		return
	}
	done := s.be.StartCommit()
	s.applyMu.Unlock()
	<-done
}

// kickCommit asks commitLoop for a commit without waiting for it.
func (s *Server) kickCommit() {
	select {
	case s.commitKick <- struct{}{}:
	default:
	}
}

// commitBackend commits and waits for it under applyMu (a snapshot needs
// the db on disk to cover everything applied).
func (s *Server) commitBackend() {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.be.Commit()
}

func jsonMember(m *membership.Member) ([]byte, error) { return json.Marshal(m) }

func idHex(id uint64) string { return strconv.FormatUint(id, 16) }
