package etcdserver

import (
	"context"
	"net/http"
	"sort"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/idutil"
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

// leaseMember is what LeaseService needs from the member it serves. The
// lessor itself belongs to the member's stores (a snapshot install replaces
// it), so the service asks for the current one each time.
type leaseMember interface {
	currentLessor() *lease.Lessor
	proposeRequest(ctx context.Context, r *pb.InternalRaftRequest) (proto.Message, error)
	// Leader is the leader's ID (0: none); leads reports this member leads.
	Leader() uint64
	leads() bool
	leaderChanged() <-chan struct{}
	memberPeerURLs(id uint64) []string
	// loopActive reports raft's loop ticked within the last three ticks.
	loopActive() bool
	// linearizableReadNotify is a quorum round confirming leadership;
	// waitCommittedApplied waits until everything committed is applied.
	linearizableReadNotify(ctx context.Context) error
	waitCommittedApplied(ctx context.Context) error
	checkQuota(ctx context.Context, r proto.Message) error
	Header() *pb.ResponseHeader
	fillHeader(h *pb.ResponseHeader)
}

// leaseAuth is the member's authGate as LeaseService uses it.
type leaseAuth interface {
	RequireAuthInfo(ctx context.Context) error
	// leaseKeysPermitted checks ctx's user may read (write: write) every
	// key attached to leases.
	leaseKeysPermitted(ctx context.Context, leases []*lease.Lease, write bool) error
}

// leaseTiming is the part of the member's configuration leases use.
type leaseTiming struct {
	request         time.Duration // --request-timeout's share (Config.requestTimeout)
	electionTimeout time.Duration // a new primary extends every lease by this
	minTTL          int64         // shortest TTL (seconds) a lease is granted
	// checkpoint: propose remaining TTLs every checkpointInterval.
	checkpoint         bool
	checkpointInterval time.Duration
	// fastKeepAlive: the leader renews a lease it knows without waiting
	// for the applied index (Config.FastLeaseKeepAlive).
	fastKeepAlive bool
}

// LeaseService serves etcd's Lease service on a member: it proposes grants,
// revokes and checkpoints, keeps the lessor primary while the member leads,
// revokes what the primary expires, and forwards keepalives and TimeToLive
// from a follower to the leader over peer HTTP.
type LeaseService struct {
	member leaseMember
	auth   leaseAuth
	ids    *idutil.Generator // fresh lease IDs
	peers  *http.Client      // to the leader's peer URLs
	lg     *zap.Logger
	stop   <-chan struct{}
	timing leaseTiming

	leaderURLs peerURLCache // where forwarded requests go
}

func newLeaseService(c *Config, member leaseMember, auth leaseAuth, ids *idutil.Generator, stop <-chan struct{}) *LeaseService {
	return &LeaseService{member: member, auth: auth, ids: ids, peers: c.peerHTTP, lg: c.Logger, stop: stop,
		timing: leaseTiming{
			request:            c.requestTimeout(),
			electionTimeout:    time.Duration(c.ElectionTicks) * c.tickInterval(),
			minTTL:             lease.MinTTL(c.ElectionTicks, c.tickInterval()),
			checkpoint:         c.LeaseCheckpoint,
			checkpointInterval: c.LeaseCheckpointInterval,
			fastKeepAlive:      c.FastLeaseKeepAlive,
		}}
}

// peersChanged forgets the cached leader URLs: a conf change or snapshot
// install may have changed them.
func (l *LeaseService) peersChanged() { l.leaderURLs.invalidate() }

// openLessor opens the lessor on a backend and re-attaches the live keys.
func (l *LeaseService) openLessor(be backend.Backend, kv *mvcc.Store) (*lease.Lessor, error) {
	var cp lease.Checkpointer
	if l.timing.checkpoint {
		cp = l.checkpointLeases
	}
	lessor, err := lease.NewLessor(lease.Config{
		Backend:                    be,
		NewTxn:                     func() lease.TxnDeleter { return kv.Write() },
		MinLeaseTTL:                l.timing.minTTL,
		Checkpointer:               cp,
		CheckpointInterval:         l.timing.checkpointInterval,
		ExpiredLeasesRetryInterval: l.timing.request,
		Logger:                     l.lg,
	})
	if err != nil {
		return nil, err
	}
	lessor.RecoverAttachments(kv.TakeRestoredLeases())
	return lessor, nil
}

// checkpointLeases is the lessor's Checkpointer: it proposes the remaining
// TTLs through raft (every member applies them in log order) and returns
// once this member has applied them, or the proposal failed. Checkpoints
// need no permission; proposing as root keeps the token of a keepalive
// (Lessor.Renew clears a checkpoint with the caller's context) out of it.
func (l *LeaseService) checkpointLeases(ctx context.Context, cps []*pb.LeaseCheckpoint) error {
	_, err := l.member.proposeRequest(withRoot(ctx), &pb.InternalRaftRequest{LeaseCheckpoint: &pb.LeaseCheckpointRequest{Checkpoints: cps}})
	return err
}

// leadershipLoop makes the lessor primary while this member leads.
// A new leader extends every lease by an election timeout, as etcd does, so
// leases are not expired for the time the cluster had no leader.
func (l *LeaseService) leadershipLoop() {
	primaryOf := (*lease.Lessor)(nil)
	for {
		changed := l.member.leaderChanged()
		lessor := l.member.currentLessor()
		leading := l.member.leads()
		switch {
		case leading && (primaryOf != lessor || !lessor.IsPrimary()):
			lessor.Promote(l.timing.electionTimeout)
			primaryOf = lessor
		case !leading && lessor.IsPrimary():
			lessor.Demote()
			primaryOf = nil
		}
		select {
		case <-changed:
		case <-time.After(expiredLeaseCheckInterval): // a snapshot install may have replaced the lessor
		case <-l.stop:
			return
		}
	}
}

// revokeExpiredLoop proposes a revoke for every lease the primary lessor
// reports expired.
func (l *LeaseService) revokeExpiredLoop() {
	for {
		select {
		case leases := <-l.member.currentLessor().ExpiredLeasesC():
			for _, le := range leases {
				l.revokeExpired(le.ID())
			}
		case <-time.After(expiredLeaseCheckInterval):
		case <-l.stop:
			return
		}
	}
}

func (l *LeaseService) revokeExpired(id lease.LeaseID) {
	ctx, cancel := context.WithTimeout(withRoot(context.Background()), l.timing.request)
	defer cancel()
	_, err := l.member.proposeRequest(ctx, &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: int64(id)}})
	if err == nil {
		metrics.LeaseExpired.Inc()
	}
	if err != nil && err != errs.ErrLeaseNotFound {
		l.lg.Warn("failed to revoke expired lease", zap.Int64("lease-id", int64(id)), zap.Error(err))
	}
}

// LeaseGrant grants a lease; ID 0 picks a fresh positive ID.
func (l *LeaseService) LeaseGrant(ctx context.Context, r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	if err := l.auth.RequireAuthInfo(ctx); err != nil {
		return nil, err
	}
	for r.ID == 0 {
		r.ID = int64(l.ids.Next() & (1<<63 - 1))
	}
	if err := l.member.checkQuota(ctx, r); err != nil {
		return nil, err
	}
	return proposeAnswer[*pb.LeaseGrantResponse](ctx, l.member, &pb.InternalRaftRequest{LeaseGrant: r})
}

// LeaseRevoke revokes a lease and deletes its keys.
func (l *LeaseService) LeaseRevoke(ctx context.Context, r *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	if err := l.auth.RequireAuthInfo(ctx); err != nil {
		return nil, err
	}
	return proposeAnswer[*pb.LeaseRevokeResponse](ctx, l.member, &pb.InternalRaftRequest{LeaseRevoke: r})
}

// LeaseRenew renews a lease on the leader (forwarding from a follower) and
// returns its TTL; an unknown lease answers errs.ErrLeaseNotFound.
func (l *LeaseService) LeaseRenew(ctx context.Context, id int64) (int64, error) {
	leases := []*lease.Lease{l.member.currentLessor().Lookup(lease.LeaseID(id))}
	if err := l.auth.leaseKeysPermitted(ctx, leases, true); err != nil {
		return -1, err
	}
	if l.member.leads() {
		// As etcd: a leader cut off from the quorum (stuck WAL, isolated,
		// or already replaced) must not extend leases the new leader may
		// be expiring; the client then moves to another member.
		if !l.ensureLeadership(ctx) {
			return -1, lease.ErrNotPrimary
		}
		// A lease granted through another member may be committed but not
		// yet applied here; with FastLeaseKeepAlive off every renewal waits
		// for the applied index, as etcd.
		if !l.timing.fastKeepAlive || l.member.currentLessor().Lookup(lease.LeaseID(id)) == nil {
			if err := l.member.waitCommittedApplied(ctx); err != nil {
				return -1, err
			}
		}
		ttl, err := l.member.currentLessor().Renew(ctx, lease.LeaseID(id))
		if err != lease.ErrNotPrimary {
			return ttl, err
		}
	}
	return l.forwardKeepAlive(ctx, id)
}

// ensureLeadership confirms that this member still leads: at once while
// raft's loop ticks (CheckQuorum then steps a cut-off leader down by
// itself, see raftView.loopActive; etcd v3.7 skips the check the same
// way), else with a quorum round (ReadIndex).
func (l *LeaseService) ensureLeadership(ctx context.Context) bool {
	if l.member.loopActive() {
		return l.member.leads()
	}
	ctx, cancel := context.WithTimeout(ctx, l.timing.request)
	defer cancel()
	if err := l.member.linearizableReadNotify(ctx); err != nil {
		return false
	}
	return l.member.leads()
}

// LeaseTimeToLive reports a lease's remaining and granted TTL (and keys).
func (l *LeaseService) LeaseTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	if err := l.checkTimeToLive(ctx, r); err != nil {
		return nil, err
	}
	if !l.member.leads() {
		return l.forwardTimeToLive(ctx, r)
	}
	return l.localTimeToLive(r), nil
}

func (l *LeaseService) localTimeToLive(r *pb.LeaseTimeToLiveRequest) *pb.LeaseTimeToLiveResponse {
	resp := &pb.LeaseTimeToLiveResponse{Header: l.member.Header(), ID: r.ID, TTL: -1}
	le := l.member.currentLessor().Lookup(lease.LeaseID(r.ID))
	if le == nil {
		return resp
	}
	resp.TTL, resp.GrantedTTL = le.RemainingTTL(), le.TTL()
	if r.Keys {
		for _, k := range le.Keys() {
			resp.Keys = append(resp.Keys, []byte(k))
		}
	}
	return resp
}

// LeaseLeases lists the leases.
func (l *LeaseService) LeaseLeases(ctx context.Context) (*pb.LeaseLeasesResponse, error) {
	resp := &pb.LeaseLeasesResponse{Header: l.member.Header()}
	leases := l.member.currentLessor().Leases()
	if err := l.auth.leaseKeysPermitted(ctx, leases, false); err != nil {
		return nil, err
	}
	// etcd lists the leases that expire soonest first.
	sort.SliceStable(leases, func(i, j int) bool { return leases[i].Remaining() < leases[j].Remaining() })
	for _, le := range leases {
		resp.Leases = append(resp.Leases, &pb.LeaseStatus{ID: int64(le.ID())})
	}
	return resp, nil
}

// checkTimeToLive needs a user when auth is on and, when the keys are
// asked for, read access to each of them (admins pass).
func (l *LeaseService) checkTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) error {
	if err := l.auth.RequireAuthInfo(ctx); err != nil || !r.Keys {
		return err
	}
	leases := []*lease.Lease{l.member.currentLessor().Lookup(lease.LeaseID(r.ID))}
	return l.auth.leaseKeysPermitted(ctx, leases, false)
}
