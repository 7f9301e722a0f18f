package etcdserver

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/apply"
	"github.com/cairnkv/cairn/server/membership"
)

var keyClusterVersion = []byte("clusterVersion")

// ReadyNotify is closed once the member has published its name and client
// URLs through raft, i.e. once it can commit and apply: it then serves.
func (s *Server) ReadyNotify() <-chan struct{} { return s.readyc }

// publishMember is what publisher needs from the member.
type publishMember interface {
	Leader() uint64
	leaderChanged() <-chan struct{}
	propose(ctx context.Context, r *pb.InternalRaftRequest) (*apply.Result, error)
	members() []*membership.Member
}

// publisher proposes this member's attributes (name, client URLs) until
// one proposal is applied, as etcd does at start, then closes ready; the
// cluster version is the version monitor's.
type publisher struct {
	self   uint64
	attrs  *membershippb.Attributes
	member publishMember
	// snapshots counts the snapshots from the leader installed so far.
	snapshots *atomic.Uint64
	timeout   time.Duration // of one proposal
	lg        *zap.Logger
	ready     chan<- struct{}
	stop      <-chan struct{}
}

func newPublisher(c *Config, self uint64, member publishMember, snapshots *atomic.Uint64, ready chan<- struct{}, stop <-chan struct{}) *publisher {
	return &publisher{self: self, attrs: &membershippb.Attributes{Name: c.Name, ClientUrls: c.ClientURLs},
		member: member, snapshots: snapshots, timeout: c.requestTimeout(), lg: c.Logger, ready: ready, stop: stop}
}

// run publishes until it succeeds or stop.
func (p *publisher) run() {
	attrs := &membershippb.ClusterMemberAttrSetRequest{Member_ID: p.self, MemberAttributes: p.attrs}
	for {
		// Take the change channel before looking, so an election between the
		// two cannot be missed.
		changed := p.member.leaderChanged()
		if p.member.Leader() == 0 {
			// Without a leader raft drops proposals; wait for one.
			select {
			case <-changed:
			case <-p.stop:
				return
			}
			continue
		}
		err := p.proposeAttributes(attrs)
		if err == nil {
			break
		}
		p.lg.Warn("failed to publish local member to cluster through raft", zap.Error(err))
		select {
		case <-time.After(500 * time.Millisecond):
		case <-p.stop:
			return
		}
	}
	p.lg.Info("published local member to cluster through raft", zap.String("local-member-id", idHex(p.self)))
	close(p.ready)
}

// publishPollInterval is how often publish looks whether a snapshot from
// the leader already holds its attributes.
const publishPollInterval = 100 * time.Millisecond

// proposeAttributes proposes attrs once and waits for the outcome. A
// member that joins may receive, while its proposal is in flight, a
// snapshot whose data already holds the proposal's effect; the entry is then
// never applied here and nothing answers the proposal. So once a snapshot
// has been installed and the applied membership shows attrs, the
// attributes count as published without waiting for the timeout.
func (p *publisher) proposeAttributes(attrs *membershippb.ClusterMemberAttrSetRequest) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	installed := p.snapshots.Load()
	done := make(chan error, 1)
	go func() {
		_, err := p.member.propose(ctx, &pb.InternalRaftRequest{ClusterMemberAttrSet: attrs})
		done <- err
	}()
	tick := time.NewTicker(publishPollInterval)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if p.snapshots.Load() != installed && p.attributesApplied(attrs) {
				return nil
			}
		}
	}
}

// attributesApplied reports whether the applied membership lists this
// member with attrs.
func (p *publisher) attributesApplied(attrs *membershippb.ClusterMemberAttrSetRequest) bool {
	m := memberByID(p.member.members(), p.self)
	return m != nil && m.Name == attrs.GetMemberAttributes().GetName() &&
		slices.Equal(m.ClientURLs, attrs.GetMemberAttributes().GetClientUrls())
}

// applyClusterRequest applies the membership requests the member itself
// proposes; it reports whether r was one of them.
func (s *Server) applyClusterRequest(r *pb.InternalRaftRequest) bool {
	switch {
	case r.GetClusterMemberAttrSet() != nil:
		s.records.applyAttrs(s.stores.be, r.GetClusterMemberAttrSet())
	case r.GetClusterVersionSet() != nil:
		if s.versions.applyClusterVersion(s.stores.be, r.GetClusterVersionSet().GetVer()) {
			s.snapshotForced = true
		}
	case r.GetDowngradeInfoSet() != nil:
		s.versions.applyDowngradeInfo(s.stores.be, r.GetDowngradeInfoSet())
	default:
		return false
	}
	return true
}
