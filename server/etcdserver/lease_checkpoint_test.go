package etcdserver

import (
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/server/lease"
)

// checkpointTestTTL is the TTL of the leases below: long enough for a
// checkpoint below it (the lessor looks every 500 ms and rounds the
// remaining TTL up to whole seconds), short enough to watch it expire.
const checkpointTestTTL = 3

// checkpointTestInterval is the checkpoint interval of the tests. The
// lessor drops a due checkpoint whose remaining TTL, rounded up, is still
// the full TTL, and schedules none after it; below a second (or below the
// promotion's extension) that can happen, so the tests stay at a second.
const checkpointTestInterval = time.Second

// grantLease grants a lease of ttl seconds with key attached.
func grantLease(t *testing.T, s *Server, ttl int64, key string) lease.LeaseID {
	t.Helper()
	g, err := s.leases.LeaseGrant(testCtx(t), &pb.LeaseGrantRequest{TTL: ttl})
	if err != nil {
		t.Fatalf("LeaseGrant: %v", err)
	}
	if _, err := s.KV().Put(testCtx(t), &pb.PutRequest{Key: []byte(key), Value: []byte("v"), Lease: g.ID}); err != nil {
		t.Fatalf("Put with lease: %v", err)
	}
	return lease.LeaseID(g.ID)
}

func checkpointedTTL(s *Server, id lease.LeaseID) int64 {
	if l := s.stores.currentLessor().Lookup(id); l != nil {
		return l.CheckpointedTTL()
	}
	return -1
}

func timeToLive(t *testing.T, s *Server, id lease.LeaseID) *pb.LeaseTimeToLiveResponse {
	t.Helper()
	resp, err := s.leases.LeaseTimeToLive(testCtx(t), &pb.LeaseTimeToLiveRequest{ID: int64(id)})
	if err != nil {
		t.Fatalf("LeaseTimeToLive: %v", err)
	}
	return resp
}

// TestLeaseCheckpointSurvivesRestart: with checkpointing on, the leader
// records the remaining TTL through raft; the record is in the lease
// bucket, so a restarted member (a new leader) counts down from it rather
// than from the granted TTL, and the lease still expires.
func TestLeaseCheckpointSurvivesRestart(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.LeaseCheckpoint, cfg.LeaseCheckpointInterval = true, checkpointTestInterval
	s := startServer(t, cfg)
	id := grantLease(t, s, checkpointTestTTL, "k")
	waitFor(t, "a checkpoint below the TTL", func() bool {
		ttl := checkpointedTTL(s, id)
		return ttl > 0 && ttl < checkpointTestTTL
	})
	s.Stop()

	restarted := time.Now()
	s = startServer(t, cfg)
	waitFor(t, "the lessor primary", s.stores.currentLessor().IsPrimary)
	cp := checkpointedTTL(s, id)
	if cp <= 0 || cp >= checkpointTestTTL {
		t.Fatalf("after restart the lease's checkpointed TTL is %d, want 1..%d (read from the lease bucket)", cp, checkpointTestTTL-1)
	}
	if got := timeToLive(t, s, id); got.TTL > cp || got.GrantedTTL != checkpointTestTTL {
		t.Fatalf("after restart TimeToLive = %d (granted %d), want at most the checkpointed %d (granted %d)",
			got.TTL, got.GrantedTTL, cp, checkpointTestTTL)
	}
	waitFor(t, "the lease revoked", func() bool { return s.stores.currentLessor().Lookup(id) == nil })
	// A full countdown would end no earlier than checkpointTestTTL after
	// the promotion, itself after restarted.
	if took := time.Since(restarted); took >= checkpointTestTTL*time.Second {
		t.Errorf("lease revoked %v after the restart; from a checkpoint of %ds it must be sooner than the full TTL", took, cp)
	}
	rr, err := s.KV().Range(testCtx(t), &pb.RangeRequest{Key: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Kvs) != 0 {
		t.Fatalf("key of the revoked lease still present: %v", rr.Kvs)
	}
}

// TestLeaseCheckpointClearedByKeepAlive: a keepalive restarts the lease at
// its full TTL, so it first clears the checkpoint through raft; otherwise
// the next leader would count down from the stale one.
func TestLeaseCheckpointClearedByKeepAlive(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.LeaseCheckpoint, cfg.LeaseCheckpointInterval = true, checkpointTestInterval
	s := startServer(t, cfg)
	id := grantLease(t, s, 30, "k")
	waitFor(t, "a checkpoint below the TTL", func() bool {
		ttl := checkpointedTTL(s, id)
		return ttl > 0 && ttl < 30
	})
	ttl, err := s.leases.LeaseRenew(testCtx(t), int64(id))
	if err != nil || ttl != 30 {
		t.Fatalf("LeaseRenew = %d, %v; want 30", ttl, err)
	}
	if cp := checkpointedTTL(s, id); cp != 0 {
		t.Fatalf("checkpointed TTL %d after a keepalive, want 0 (cleared)", cp)
	}
	s.Stop()
	s = startServer(t, cfg)
	if cp := checkpointedTTL(s, id); cp != 0 {
		t.Fatalf("checkpointed TTL %d after a keepalive and a restart, want 0 (cleared in the lease bucket)", cp)
	}
}

// TestLeaseCheckpointDisabled is etcd's default behaviour (feature gate
// LeaseCheckpoint off): nothing is checkpointed and a new leader restarts
// every lease at its full TTL.
func TestLeaseCheckpointDisabled(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.LeaseCheckpointInterval = checkpointTestInterval
	s := startServer(t, cfg)
	const ttl = 10
	id := grantLease(t, s, ttl, "k")
	time.Sleep(2 * checkpointTestInterval)
	if cp := checkpointedTTL(s, id); cp != 0 {
		t.Fatalf("checkpointed TTL %d with checkpointing off, want 0", cp)
	}
	s.Stop()
	restarted := time.Now()
	s = startServer(t, cfg)
	waitFor(t, "the lessor primary", s.stores.currentLessor().IsPrimary)
	// Promoted after restarted, the lease expires a full TTL (plus an
	// election timeout) after the promotion.
	rem := s.stores.currentLessor().Lookup(id).Remaining()
	if since := time.Since(restarted); rem+since < ttl*time.Second {
		t.Fatalf("after restart the lease expires in %v, %v after the restart; want the full TTL %ds from the promotion", rem, since, ttl)
	}
}
