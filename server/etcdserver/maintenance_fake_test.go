package etcdserver

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/quorum"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// fakeMaintenanceMember is a member as Maintenance sees it, without raft
// or stores: its raft status and store facts are chosen by the test.
type fakeMaintenanceMember struct {
	mu        sync.Mutex
	self      uint64
	leader    uint64
	voters    []uint64
	commit    uint64
	term      uint64
	store     storeStatus
	stopped   bool
	connected map[uint64]time.Time
	be        backend.Backend // nil: no stores
}

func (f *fakeMaintenanceMember) RaftStatus() (raft.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	voters := quorum.MajorityConfig{}
	for _, id := range f.voters {
		voters[id] = struct{}{}
	}
	commit, term := f.commit, f.term
	st := raft.Status{Config: tracker.Config{Voters: quorum.JointConfig{voters, nil}}}
	st.ID, st.Lead, st.HardState = f.self, f.leader, &raftpb.HardState{Commit: &commit, Term: &term}
	return st, nil
}
func (f *fakeMaintenanceMember) Leader() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leader
}
func (f *fakeMaintenanceMember) leads() bool                        { return f.Leader() == f.self }
func (f *fakeMaintenanceMember) IsLearner() bool                    { return false }
func (f *fakeMaintenanceMember) members() []*membership.Member      { return nil }
func (f *fakeMaintenanceMember) connectedSince(id uint64) time.Time { return f.connected[id] }
func (f *fakeMaintenanceMember) Header() *pb.ResponseHeader {
	return &pb.ResponseHeader{MemberId: f.self, RaftTerm: f.term}
}
func (f *fakeMaintenanceMember) fillHeader(h *pb.ResponseHeader) {
	h.MemberId, h.RaftTerm = f.self, f.term
}
func (f *fakeMaintenanceMember) proposeRequest(context.Context, *pb.InternalRaftRequest) (proto.Message, error) {
	return &pb.AlarmResponse{Header: &pb.ResponseHeader{}}, nil
}
func (f *fakeMaintenanceMember) storeStatus() (storeStatus, bool) { return f.store, !f.stopped }
func (f *fakeMaintenanceMember) backend() (backend.Backend, bool) { return f.be, f.be != nil }
func (f *fakeMaintenanceMember) withApplyLock(fn func(backend.Backend)) {
	if f.be != nil {
		fn(f.be)
	}
}
func (f *fakeMaintenanceMember) hashByRev(int64) (mvcc.KeyValueHash, int64, error) {
	return mvcc.KeyValueHash{}, 0, errs.ErrStopped
}

// fakeMover hands leadership over at once by telling the member.
type fakeMover struct {
	m      *fakeMaintenanceMember
	moved  []uint64
	refuse bool
}

func (n *fakeMover) Started() bool { return true }
func (n *fakeMover) TransferLeadership(_ context.Context, to uint64) error {
	if n.refuse {
		return errors.New("refused")
	}
	n.moved = append(n.moved, to)
	n.m.mu.Lock()
	n.m.leader = to
	n.m.mu.Unlock()
	return nil
}

type fakeDowngrades struct{ info downgradeInfo }

func (d fakeDowngrades) downgrade() downgradeInfo { return d.info }
func (d fakeDowngrades) Downgrade(context.Context, *pb.DowngradeRequest) (*pb.DowngradeResponse, error) {
	return &pb.DowngradeResponse{}, nil
}

func newTestMaintenance(f *fakeMaintenanceMember) (*Maintenance, *fakeMover) {
	n := &fakeMover{m: f}
	return &Maintenance{self: f.self, member: f, node: n, versions: fakeDowngrades{}, lg: zap.NewNop(),
		stop: make(chan struct{}), tick: time.Millisecond, request: opTimeout}, n
}

func TestMaintenanceStatusReportsRaftStoreAndDowngrade(t *testing.T) {
	f := &fakeMaintenanceMember{self: 1, leader: 2, voters: []uint64{1, 2, 3}, commit: 40, term: 3,
		store: storeStatus{dbSize: 1 << 20, dbSizeInUse: 1 << 19, quotaBytes: 2 << 30, storageVersion: "3.6.0",
			appliedIndex: 39, alarms: []*pb.AlarmMember{{MemberID: 1, Alarm: pb.AlarmType_NOSPACE}}}}
	m, _ := newTestMaintenance(f)
	m.versions = fakeDowngrades{downgradeInfo{TargetVersion: "3.6.0", Enabled: true}}
	st, err := m.Status(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := &pb.StatusResponse{
		Header: &pb.ResponseHeader{MemberId: 1, RaftTerm: 3}, Version: serverVersion,
		DbSize: 1 << 20, DbSizeInUse: 1 << 19, Leader: 2, RaftIndex: 40, RaftTerm: 3, RaftAppliedIndex: 39,
		DbSizeQuota: 2 << 30, StorageVersion: "3.6.0", Errors: []string{f.store.alarms[0].String()},
		DowngradeInfo: &pb.DowngradeInfo{TargetVersion: "3.6.0", Enabled: true},
	}
	if !proto.Equal(st, want) {
		t.Fatalf("Status =\n%v\nwant\n%v", st, want)
	}
	f.stopped = true
	if _, err := m.Status(testCtx(t)); !errors.Is(err, errs.ErrStopped) {
		t.Fatalf("Status of a stopped member: %v, want ErrStopped", err)
	}
}

func TestMaintenanceMoveLeaderChecks(t *testing.T) {
	tests := []struct {
		name   string
		leader uint64
		target uint64
		refuse bool
		want   error
	}{
		{name: "moved", leader: 1, target: 2},
		{name: "not leader", leader: 2, target: 3, want: errs.ErrNotLeader},
		{name: "not a voter", leader: 1, target: 9, want: errs.ErrBadLeaderTransferee},
		{name: "raft refuses", leader: 1, target: 2, refuse: true, want: errs.ErrTimeoutLeaderTransfer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeMaintenanceMember{self: 1, leader: tt.leader, voters: []uint64{1, 2, 3}}
			m, n := newTestMaintenance(f)
			n.refuse = tt.refuse
			_, err := m.MoveLeader(testCtx(t), &pb.MoveLeaderRequest{TargetID: tt.target})
			if !errors.Is(err, tt.want) {
				t.Fatalf("MoveLeader: %v, want %v", err, tt.want)
			}
			if tt.want == nil && f.Leader() != tt.target {
				t.Fatalf("leader %d after the move, want %d", f.Leader(), tt.target)
			}
		})
	}
}

func TestMaintenanceHandOverPicksTheLongestConnectedVoter(t *testing.T) {
	now := time.Now()
	f := &fakeMaintenanceMember{self: 1, leader: 1, voters: []uint64{1, 2, 3, 4},
		connected: map[uint64]time.Time{2: now.Add(-time.Minute), 3: now.Add(-time.Hour)}} // 4 is down
	m, n := newTestMaintenance(f)
	m.HandOverLeadership()
	if len(n.moved) != 1 || n.moved[0] != 3 {
		t.Fatalf("handed over to %v, want [3]", n.moved)
	}
	// A follower hands nothing over.
	m.HandOverLeadership()
	if len(n.moved) != 1 {
		t.Fatalf("a follower handed over: %v", n.moved)
	}
}

// defragLog records what a DefragWatcher was told.
type defragLog struct{ events []string }

func (l *defragLog) DefragStarted()  { l.events = append(l.events, "started") }
func (l *defragLog) DefragFinished() { l.events = append(l.events, "finished") }

// TestAutoDefragTellsItsWatchers: an automatic defrag is announced to the
// watchers (v3rpc's health service) before it starts and after it ends.
func TestAutoDefragTellsItsWatchers(t *testing.T) {
	be, _ := backend.NewTmpBackend(t)
	m, _ := newTestMaintenance(&fakeMaintenanceMember{self: 1, be: be})
	var a, b defragLog
	m.WatchAutoDefrags(&a)
	m.WatchAutoDefrags(&b)
	m.autoDefrag()
	for _, l := range []defragLog{a, b} {
		if !slices.Equal(l.events, []string{"started", "finished"}) {
			t.Fatalf("watcher told %v, want started, finished", l.events)
		}
	}
}

// TestDefragmentStartsFromTheNewestState: Defragment has the member commit
// (under applyMu) before the online defrag copies, so writes applied just
// before it, a delete of everything say, are in the copy's source.
func TestDefragmentStartsFromTheNewestState(t *testing.T) {
	be, _ := backend.NewTmpBackend(t)
	tx := be.BatchTx()
	tx.Lock()
	tx.UnsafePut(backend.BucketKey, []byte("applied"), []byte("just now"))
	tx.Unlock()
	m, _ := newTestMaintenance(&fakeMaintenanceMember{self: 1, be: be})
	if err := m.Defragment(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := be.PendingWrites(); n != 0 {
		t.Fatalf("%d writes still uncommitted after Defragment: it did not commit first", n)
	}
}
