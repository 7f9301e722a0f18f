package etcdserver

import (
	"errors"
	"time"

	"github.com/cairnkv/cairn/server/errs"

	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/server/apply"
)

// The IDs etcd derives for --name default, peer URL http://localhost:2380
// and token etcd-cluster.
const (
	etcdDefaultMemberID  uint64 = 0x8e9e05c52164694d
	etcdDefaultClusterID uint64 = 0xcdf818194e3a8c32
)

func TestPutRangeRoundTrip(t *testing.T) {
	s := startServer(t, testConfig(t.TempDir()))
	ctx := testCtx(t)

	put := mustPut(t, s, "foo", "bar")
	if put.GetHeader().GetRevision() < 2 {
		t.Fatalf("put revision = %d, want >= 2", put.GetHeader().GetRevision())
	}
	rr, err := s.KV().Range(ctx, &pb.RangeRequest{Key: []byte("foo")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.GetKvs()) != 1 || string(rr.GetKvs()[0].GetValue()) != "bar" {
		t.Fatalf("Range(foo) = %v, want one kv foo=bar", rr.GetKvs())
	}
	kv := rr.GetKvs()[0]
	if kv.GetModRevision() != put.GetHeader().GetRevision() || kv.GetCreateRevision() != kv.GetModRevision() || kv.GetVersion() != 1 {
		t.Errorf("kv = %v, want create=mod=%d version 1", kv, put.GetHeader().GetRevision())
	}
	if rr.GetHeader().GetRevision() != put.GetHeader().GetRevision() {
		t.Errorf("range revision = %d, want %d", rr.GetHeader().GetRevision(), put.GetHeader().GetRevision())
	}

	// Serializable reads and read-only txns see the applied write too.
	sr, err := s.KV().Range(ctx, &pb.RangeRequest{Key: []byte("foo"), Serializable: true})
	if err != nil || len(sr.GetKvs()) != 1 {
		t.Fatalf("serializable Range = %v, %v", sr.GetKvs(), err)
	}
	tr, err := s.KV().Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("foo")}}}}})
	if err != nil || !tr.GetSucceeded() || len(tr.GetResponses()) != 1 {
		t.Fatalf("read-only Txn = %v, %v", tr, err)
	}

	dr, err := s.KV().DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("foo")})
	if err != nil || dr.GetDeleted() != 1 {
		t.Fatalf("DeleteRange = %v, %v", dr, err)
	}
	rr, err = s.KV().Range(ctx, &pb.RangeRequest{Key: []byte("foo")})
	if err != nil || len(rr.GetKvs()) != 0 {
		t.Fatalf("Range after delete = %v, %v", rr.GetKvs(), err)
	}

	for name, h := range map[string]*pb.ResponseHeader{"Header()": s.Header(), "put": put.GetHeader(), "range": rr.GetHeader(), "delete": dr.GetHeader()} {
		if h.GetMemberId() != etcdDefaultMemberID || h.GetClusterId() != etcdDefaultClusterID {
			t.Errorf("%s: member %x cluster %x, want member %x cluster %x", name,
				h.GetMemberId(), h.GetClusterId(), etcdDefaultMemberID, etcdDefaultClusterID)
		}
		if h.GetRaftTerm() == 0 {
			t.Errorf("%s: raft term 0", name)
		}
	}
	if s.ID() != etcdDefaultMemberID || s.ClusterID() != etcdDefaultClusterID {
		t.Errorf("ID() %x ClusterID() %x", s.ID(), s.ClusterID())
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		name      string
		quota     int64
		wantQuota int64
	}{
		{"default quota", 0, apply.DefaultQuotaBytes},
		{"configured quota", 64 << 20, 64 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.QuotaBackendBytes = tt.quota
			s := startServer(t, cfg)
			mustPut(t, s, "a", "1")
			st, err := s.maint.Status(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			if st.GetLeader() != s.ID() || s.Leader() != s.ID() {
				t.Errorf("Leader = %x (Leader() %x), want self %x", st.GetLeader(), s.Leader(), s.ID())
			}
			if st.GetRaftIndex() == 0 || st.GetRaftAppliedIndex() < st.GetRaftIndex() {
				t.Errorf("RaftAppliedIndex %d < RaftIndex %d after an acknowledged write", st.GetRaftAppliedIndex(), st.GetRaftIndex())
			}
			if st.GetRaftTerm() == 0 {
				t.Error("RaftTerm 0")
			}
			if st.GetVersion() != "3.7.1" {
				t.Errorf("Version = %q, want 3.7.1", st.GetVersion())
			}
			if st.GetDbSizeQuota() != tt.wantQuota {
				t.Errorf("DbSizeQuota = %d, want %d", st.GetDbSizeQuota(), tt.wantQuota)
			}
			if st.GetDbSize() <= 0 || st.GetDbSizeInUse() <= 0 || st.GetDbSizeInUse() > st.GetDbSize() {
				t.Errorf("DbSize %d DbSizeInUse %d", st.GetDbSize(), st.GetDbSizeInUse())
			}
			if st.GetIsLearner() || len(st.GetErrors()) != 0 {
				t.Errorf("IsLearner %v Errors %v", st.GetIsLearner(), st.GetErrors())
			}
			if h := st.GetHeader(); h.GetMemberId() != etcdDefaultMemberID || h.GetClusterId() != etcdDefaultClusterID {
				t.Errorf("header %v", h)
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
	}{
		{"name not in initial cluster", func(c *Config) { c.Name = "other" }},
		{"existing cluster without data", func(c *Config) { c.NewCluster = false }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			tt.modify(cfg)
			s, err := New(cfg)
			if err == nil {
				s.Stop()
				t.Fatal("New succeeded, want an error")
			}
		})
	}
}

// writeHistory writes n puts over a few keys (so keys get several versions)
// plus some deletes and a txn, and returns the last revision.
func writeHistory(t *testing.T, s *Server, n int) {
	t.Helper()
	ctx := testCtx(t)
	for i := range n {
		mustPut(t, s, key(i%17), strings.Repeat("v", i%5)+key(i))
	}
	if _, err := s.KV().DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte(key(3))}); err != nil {
		t.Fatal(err)
	}
	txn := &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: []byte(key(4)), Target: pb.Compare_VERSION, Result: pb.Compare_GREATER,
			TargetUnion: &pb.Compare_Version{Version: 0}}},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("txn"), Value: []byte("ok")}}}},
	}
	if tr, err := s.KV().Txn(ctx, txn); err != nil || !tr.GetSucceeded() {
		t.Fatalf("Txn = %v, %v", tr, err)
	}
}

// TestRestart restarts members on their data dir and checks that nothing
// was lost and nothing applied twice: a re-applied put would bump the
// revision and the versions.
func TestRestart(t *testing.T) {
	tests := []struct {
		name          string
		writes        int
		snapshotCount uint64
		catchUp       uint64
		wantSnap      bool
	}{
		{"no snapshot", 40, 0, 0, false},
		{"after snapshots", 200, 20, 5, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.SnapshotCount, cfg.SnapshotCatchUpEntries = tt.snapshotCount, tt.catchUp
			s := startServer(t, cfg)
			writeHistory(t, s, tt.writes)
			want := readState(t, s)
			s.Stop()

			snaps, _ := filepath.Glob(filepath.Join(cfg.DataDir, "member", "snap", "*.snap"))
			if tt.wantSnap && len(snaps) == 0 {
				t.Fatal("no .snap file after the writes")
			}
			if !tt.wantSnap && len(snaps) != 0 {
				t.Fatalf(".snap files %v with the default snapshot count", snaps)
			}

			// Twice: the second restart starts from a WAL the first restart
			// appended to (and, with snapshots, from a snapshot it replayed).
			for round := 1; round <= 2; round++ {
				s2 := startServer(t, cfg)
				if s2.ID() != etcdDefaultMemberID || s2.ClusterID() != etcdDefaultClusterID {
					t.Errorf("restart %d: ID %x cluster %x", round, s2.ID(), s2.ClusterID())
				}
				compareState(t, want, readState(t, s2))
				s2.Stop()
			}

			// The member still takes writes after restarts.
			s3 := startServer(t, cfg)
			put := mustPut(t, s3, "after", "restart")
			if put.GetHeader().GetRevision() != want.rev+1 {
				t.Errorf("first write after restart at revision %d, want %d", put.GetHeader().GetRevision(), want.rev+1)
			}
		})
	}
}

// TestReplayWithStaleBackend simulates a crash: the data dir is copied while
// the member runs and before its backend was ever committed, so the copy
// holds a WAL with every acknowledged write and a backend that has none of
// them. A member started on the copy must replay them all, once.
func TestReplayWithStaleBackend(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.BackendBatchInterval = 1 << 40 // never within the test
	s := startServer(t, cfg)
	writeHistory(t, s, 30)
	crashed := testConfig(filepath.Join(t.TempDir(), "crashed"))
	copyDir(t, cfg.DataDir, crashed.DataDir) // before anything commits the backend
	want := readState(t, s)
	s.Stop()

	s2 := startServer(t, crashed)
	compareState(t, want, readState(t, s2))
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		if strings.HasSuffix(p, ".tmp") {
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, src); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatalf("copy %s: %v", from, err)
	}
}

// A member that was opened but never started must still stop cleanly.
func TestStopWithoutStart(t *testing.T) {
	s, err := New(testConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		s.Stop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(opTimeout):
		t.Fatal("Stop of a member that never started hangs")
	}
}

// TestCompactionTuningReachesStore: --compaction-batch-limit and
// --compaction-sleep-interval tune the member's store (0 keeps etcd's
// defaults).
func TestCompactionTuningReachesStore(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.CompactionBatchLimit, cfg.CompactionSleepInterval = 7, 3*time.Millisecond
	s := startServer(t, cfg)
	if got := s.stores.kv.Config(); got.CompactionBatchLimit != 7 || got.CompactionSleepInterval != 3*time.Millisecond {
		t.Fatalf("store config %+v, want batch limit 7 and sleep 3ms", got)
	}
	d := startServer(t, testConfig(t.TempDir()))
	if got := d.stores.kv.Config(); got.CompactionBatchLimit != 1000 || got.CompactionSleepInterval != 10*time.Millisecond {
		t.Fatalf("default store config %+v, want etcd's 1000 and 10ms", got)
	}
}

func TestExceedsApplyBacklog(t *testing.T) {
	put := &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k")}}
	revoke := &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: 1}}
	const applied = 100
	tests := []struct {
		name      string
		committed uint64
		r         *pb.InternalRaftRequest
		priority  bool
		want      bool
	}{
		{"within the backlog", applied + maxApplyBacklog, put, false, false},
		{"past the backlog", applied + maxApplyBacklog + 1, put, false, true},
		{"revoke without priority", applied + maxApplyBacklog + 1, revoke, false, true},
		{"revoke with priority", applied + maxApplyBacklog + 1, revoke, true, false},
		{"revoke at twice the backlog", applied + 2*maxApplyBacklog, revoke, true, false},
		{"revoke past twice the backlog", applied + 2*maxApplyBacklog + 1, revoke, true, true},
		{"put with priority on", applied + maxApplyBacklog + 1, put, true, true},
	}
	for _, tt := range tests {
		if got := exceedsApplyBacklog(tt.committed, applied, tt.r, tt.priority); got != tt.want {
			t.Errorf("%s: exceedsApplyBacklog = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestLeaseRenewOnLeader: the leader renews after confirming its
// leadership, with FastLeaseKeepAlive on and off; an unknown lease is not
// found either way.
func TestLeaseRenewOnLeader(t *testing.T) {
	for _, fast := range []bool{true, false} {
		cfg := testConfig(t.TempDir())
		cfg.FastLeaseKeepAlive = fast
		s := startServer(t, cfg)
		g, err := s.leases.LeaseGrant(testCtx(t), &pb.LeaseGrantRequest{TTL: 30})
		if err != nil {
			t.Fatal(err)
		}
		if ttl, err := s.leases.LeaseRenew(testCtx(t), g.ID); err != nil || ttl != 30 {
			t.Fatalf("fast=%v: renew = %d, %v; want 30", fast, ttl, err)
		}
		if _, err := s.leases.LeaseRenew(testCtx(t), g.ID+1); !errors.Is(err, errs.ErrLeaseNotFound) {
			t.Fatalf("fast=%v: renew of an unknown lease: %v, want lease not found", fast, err)
		}
		s.Stop()
	}
}
