package etcdserver

import (
	"context"
	"sort"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/lease"
	"github.com/cairnkv/cairn/server/metrics"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// Leases on the member. Grant, revoke and checkpoints go through raft and
// are applied by server/apply into the lessor. Only the leader's lessor is
// primary: it expires leases (this file proposes their revokes) and serves
// keepalives; a follower forwards keepalives and TimeToLive to the leader
// over the peer URLs (leasehttp.go). With Config.LeaseCheckpoint the
// primary also proposes each long lease's remaining TTL every
// Config.LeaseCheckpointInterval, so the next leader counts down from it
// rather than from the full TTL.

// expiredLeaseCheckInterval bounds how long the revoke loop waits before it
// looks again at a lessor replaced by a snapshot install.
const expiredLeaseCheckInterval = 500 * time.Millisecond

// openLessor opens the lessor on a backend and re-attaches the live keys.
func (s *Server) openLessor(be backend.Backend, kv *mvcc.Store) (*lease.Lessor, error) {
	var cp lease.Checkpointer
	if s.cfg.LeaseCheckpoint {
		cp = s.checkpointLeases
	}
	l, err := lease.NewLessor(lease.Config{
		Backend:                    be,
		NewTxn:                     func() lease.TxnDeleter { return kv.Write() },
		MinLeaseTTL:                lease.MinTTL(s.cfg.ElectionTicks, s.cfg.tickInterval()),
		Checkpointer:               cp,
		CheckpointInterval:         s.cfg.LeaseCheckpointInterval,
		ExpiredLeasesRetryInterval: s.cfg.requestTimeout(),
		Logger:                     s.lg,
	})
	if err != nil {
		return nil, err
	}
	l.RecoverAttachments(kv.TakeRestoredLeases())
	return l, nil
}

// checkpointLeases is the lessor's Checkpointer: it proposes the remaining
// TTLs through raft (every member applies them in log order) and returns
// once this member has applied them, or the proposal failed. Checkpoints
// need no permission; proposing as root keeps the token of a keepalive
// (Lessor.Renew clears a checkpoint with the caller's context) out of it.
func (s *Server) checkpointLeases(ctx context.Context, cps []*pb.LeaseCheckpoint) error {
	_, err := s.proposeRequest(withRoot(ctx), &pb.InternalRaftRequest{LeaseCheckpoint: &pb.LeaseCheckpointRequest{Checkpoints: cps}})
	return err
}

func (s *Server) currentLessor() *lease.Lessor {
	s.storeMu.RLock()
	defer s.storeMu.RUnlock()
	return s.lessor
}

// leaseLeadershipLoop makes the lessor primary while this member leads.
// A new leader extends every lease by an election timeout, as etcd does, so
// leases are not expired for the time the cluster had no leader.
func (s *Server) leaseLeadershipLoop() {
	primaryOf := (*lease.Lessor)(nil)
	for {
		changed := s.node.LeaderChanged()
		l := s.currentLessor()
		leading := s.Leader() == s.id
		switch {
		case leading && (primaryOf != l || !l.IsPrimary()):
			l.Promote(time.Duration(s.cfg.ElectionTicks) * s.cfg.tickInterval())
			primaryOf = l
		case !leading && l.IsPrimary():
			l.Demote()
			primaryOf = nil
		}
		select {
		case <-changed:
		case <-time.After(expiredLeaseCheckInterval): // a snapshot install may have replaced the lessor
		case <-s.stopc:
			return
		}
	}
}

// revokeExpiredLeasesLoop proposes a revoke for every lease the primary
// lessor reports expired.
func (s *Server) revokeExpiredLeasesLoop() {
	for {
		select {
		case leases := <-s.currentLessor().ExpiredLeasesC():
			for _, l := range leases {
				s.revokeExpired(l.ID())
			}
		case <-time.After(expiredLeaseCheckInterval):
		case <-s.stopc:
			return
		}
	}
}

func (s *Server) revokeExpired(id lease.LeaseID) {
	ctx, cancel := context.WithTimeout(withRoot(context.Background()), s.cfg.requestTimeout())
	defer cancel()
	_, err := s.proposeRequest(ctx, &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: int64(id)}})
	if err == nil {
		metrics.LeaseExpired.Inc()
	}
	if err != nil && err != errs.ErrLeaseNotFound {
		s.lg.Warn("failed to revoke expired lease", zap.Int64("lease-id", int64(id)), zap.Error(err))
	}
}

// LeaseGrant grants a lease; ID 0 picks a fresh positive ID.
func (s *Server) LeaseGrant(ctx context.Context, r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	if err := s.RequireAuthInfo(ctx); err != nil {
		return nil, err
	}
	for r.ID == 0 {
		r.ID = int64(s.reqIDs.Next() & (1<<63 - 1))
	}
	if err := s.checkQuota(ctx, r); err != nil {
		return nil, err
	}
	resp, err := s.proposeRequest(ctx, &pb.InternalRaftRequest{LeaseGrant: r})
	if err != nil {
		return nil, err
	}
	out := resp.(*pb.LeaseGrantResponse)
	s.fillHeader(&out.Header)
	return out, nil
}

// LeaseRevoke revokes a lease and deletes its keys.
func (s *Server) LeaseRevoke(ctx context.Context, r *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	if err := s.RequireAuthInfo(ctx); err != nil {
		return nil, err
	}
	resp, err := s.proposeRequest(ctx, &pb.InternalRaftRequest{LeaseRevoke: r})
	if err != nil {
		return nil, err
	}
	out := resp.(*pb.LeaseRevokeResponse)
	s.fillHeader(&out.Header)
	return out, nil
}

// LeaseRenew renews a lease on the leader (forwarding from a follower) and
// returns its TTL; an unknown lease answers errs.ErrLeaseNotFound.
func (s *Server) LeaseRenew(ctx context.Context, id int64) (int64, error) {
	leases := []*lease.Lease{s.currentLessor().Lookup(lease.LeaseID(id))}
	if err := s.checkLeaseKeys(ctx, leases, s.putCheck); err != nil {
		return -1, err
	}
	if s.Leader() == s.id {
		// As etcd: a leader cut off from the quorum (stuck WAL, isolated,
		// or already replaced) must not extend leases the new leader may
		// be expiring; the client then moves to another member.
		if !s.ensureLeadership(ctx) {
			return -1, lease.ErrNotPrimary
		}
		// A lease granted through another member may be committed but not
		// yet applied here; with FastLeaseKeepAlive off every renewal waits
		// for the applied index, as etcd.
		if !s.cfg.FastLeaseKeepAlive || s.currentLessor().Lookup(lease.LeaseID(id)) == nil {
			if err := s.waitCommittedApplied(ctx); err != nil {
				return -1, err
			}
		}
		ttl, err := s.currentLessor().Renew(ctx, lease.LeaseID(id))
		if err != lease.ErrNotPrimary {
			return ttl, err
		}
	}
	return s.forwardKeepAlive(ctx, id)
}

// ensureLeadership confirms with a quorum round (ReadIndex) that this
// member still leads.
func (s *Server) ensureLeadership(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.requestTimeout())
	defer cancel()
	if err := s.linearizableReadNotify(ctx); err != nil {
		return false
	}
	return s.Leader() == s.id
}

// LeaseTimeToLive reports a lease's remaining and granted TTL (and keys).
func (s *Server) LeaseTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	if err := s.checkTimeToLive(ctx, r); err != nil {
		return nil, err
	}
	if s.Leader() != s.id {
		return s.forwardTimeToLive(ctx, r)
	}
	return s.localTimeToLive(r), nil
}

func (s *Server) localTimeToLive(r *pb.LeaseTimeToLiveRequest) *pb.LeaseTimeToLiveResponse {
	resp := &pb.LeaseTimeToLiveResponse{Header: s.Header(), ID: r.ID, TTL: -1}
	l := s.currentLessor().Lookup(lease.LeaseID(r.ID))
	if l == nil {
		return resp
	}
	resp.TTL, resp.GrantedTTL = l.RemainingTTL(), l.TTL()
	if r.Keys {
		for _, k := range l.Keys() {
			resp.Keys = append(resp.Keys, []byte(k))
		}
	}
	return resp
}

// LeaseLeases lists the leases.
func (s *Server) LeaseLeases(ctx context.Context) (*pb.LeaseLeasesResponse, error) {
	resp := &pb.LeaseLeasesResponse{Header: s.Header()}
	leases := s.currentLessor().Leases()
	if err := s.checkLeaseKeys(ctx, leases, s.rangeCheck); err != nil {
		return nil, err
	}
	// etcd lists the leases that expire soonest first.
	sort.SliceStable(leases, func(i, j int) bool { return leases[i].Remaining() < leases[j].Remaining() })
	for _, l := range leases {
		resp.Leases = append(resp.Leases, &pb.LeaseStatus{ID: int64(l.ID())})
	}
	return resp, nil
}

// checkTimeToLive needs a user when auth is on and, when the keys are
// asked for, read access to each of them (admins pass).
func (s *Server) checkTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) error {
	if err := s.RequireAuthInfo(ctx); err != nil || !r.Keys {
		return err
	}
	leases := []*lease.Lease{s.currentLessor().Lookup(lease.LeaseID(r.ID))}
	return s.checkLeaseKeys(ctx, leases, s.rangeCheck)
}
