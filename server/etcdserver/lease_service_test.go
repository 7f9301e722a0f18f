package etcdserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/idutil"
	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/lease"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// fakeLeaseMember is a member as LeaseService sees it, without raft: a real
// lessor on a temporary backend, a leader chosen by the test, and proposals
// recorded instead of replicated.
type fakeLeaseMember struct {
	lessor   *lease.Lessor
	self     uint64
	leader   uint64
	peerURLs map[uint64][]string
	readErr  error // linearizableReadNotify's answer
	reads    int   // linearizableReadNotify calls
	stalled  bool  // raft's loop has not ticked lately (loopActive false)
	authErr  error // RequireAuthInfo's answer
	proposed []*pb.InternalRaftRequest
}

func newFakeLeaseMember(t *testing.T, self, leader uint64) *fakeLeaseMember {
	be, _ := backend.NewTmpBackend(t)
	l, err := lease.NewLessor(lease.Config{Backend: be, MinLeaseTTL: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	return &fakeLeaseMember{lessor: l, self: self, leader: leader, peerURLs: map[uint64][]string{}}
}

func (f *fakeLeaseMember) currentLessor() *lease.Lessor      { return f.lessor }
func (f *fakeLeaseMember) Leader() uint64                    { return f.leader }
func (f *fakeLeaseMember) leads() bool                       { return f.leader == f.self }
func (f *fakeLeaseMember) leaderChanged() <-chan struct{}    { return make(chan struct{}) }
func (f *fakeLeaseMember) memberPeerURLs(id uint64) []string { return f.peerURLs[id] }
func (f *fakeLeaseMember) linearizableReadNotify(context.Context) error {
	f.reads++
	return f.readErr
}
func (f *fakeLeaseMember) loopActive() bool                           { return !f.stalled }
func (f *fakeLeaseMember) waitCommittedApplied(context.Context) error { return nil }
func (f *fakeLeaseMember) RequireAuthInfo(context.Context) error      { return f.authErr }
func (f *fakeLeaseMember) leaseKeysPermitted(context.Context, []*lease.Lease, bool) error {
	return nil
}
func (f *fakeLeaseMember) checkQuota(context.Context, proto.Message) error { return nil }
func (f *fakeLeaseMember) Header() *pb.ResponseHeader {
	return &pb.ResponseHeader{MemberId: f.self, RaftTerm: 2}
}
func (f *fakeLeaseMember) fillHeader(h *pb.ResponseHeader) { h.MemberId = f.self }

// proposeRequest applies grants and revokes to the lessor at once, as the
// apply loop would once raft committed them.
func (f *fakeLeaseMember) proposeRequest(_ context.Context, r *pb.InternalRaftRequest) (proto.Message, error) {
	f.proposed = append(f.proposed, r)
	switch {
	case r.LeaseGrant != nil:
		l, err := f.lessor.Grant(lease.LeaseID(r.LeaseGrant.ID), r.LeaseGrant.TTL)
		if err != nil {
			return nil, err
		}
		return &pb.LeaseGrantResponse{Header: &pb.ResponseHeader{}, ID: int64(l.ID()), TTL: l.TTL()}, nil
	case r.LeaseRevoke != nil:
		return &pb.LeaseRevokeResponse{Header: &pb.ResponseHeader{}}, f.lessor.Revoke(lease.LeaseID(r.LeaseRevoke.ID))
	}
	return nil, errors.New("unexpected proposal")
}

func newTestLeaseService(t *testing.T, m *fakeLeaseMember) *LeaseService {
	return &LeaseService{member: m, auth: m, ids: idutil.NewGenerator(uint16(m.self), time.Unix(0, 0)),
		peers: http.DefaultClient, lg: zap.NewNop(), stop: make(chan struct{}),
		timing: leaseTiming{request: opTimeout, electionTimeout: time.Second, minTTL: 1}}
}

// servePeer serves l's side of the forwarded lease requests.
func servePeer(t *testing.T, l *LeaseService) string {
	mux := http.NewServeMux()
	mux.HandleFunc(leasesPath, l.serveLeaseRenew)
	mux.HandleFunc(leasesInternalPath, l.serveLeaseInternal)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs.URL
}

// leaderAndFollower: member 1 leads with lease 7 (TTL 30) granted on its
// primary lessor; member 2 follows and knows 1's peer URL.
func leaderAndFollower(t *testing.T) (leader, follower *LeaseService) {
	lm := newFakeLeaseMember(t, 1, 1)
	lm.lessor.Promote(0)
	if _, err := lm.lessor.Grant(7, 30); err != nil {
		t.Fatal(err)
	}
	leader = newTestLeaseService(t, lm)
	fm := newFakeLeaseMember(t, 2, 1)
	fm.peerURLs[1] = []string{servePeer(t, leader)}
	return leader, newTestLeaseService(t, fm)
}

func TestLeaseServiceFollowerForwardsKeepAliveToLeader(t *testing.T) {
	_, follower := leaderAndFollower(t)
	ttl, err := follower.LeaseRenew(testCtx(t), 7)
	if err != nil || ttl != 30 {
		t.Fatalf("renew through the leader = %d, %v; want 30, nil", ttl, err)
	}
	if _, err := follower.LeaseRenew(testCtx(t), 8); !errors.Is(err, errs.ErrLeaseNotFound) {
		t.Fatalf("renew of an unknown lease: %v, want ErrLeaseNotFound", err)
	}
}

func TestLeaseServiceFollowerForwardsTimeToLiveToLeader(t *testing.T) {
	_, follower := leaderAndFollower(t)
	resp, err := follower.LeaseTimeToLive(testCtx(t), &pb.LeaseTimeToLiveRequest{ID: 7})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GrantedTTL != 30 || resp.TTL <= 0 || resp.TTL > 30 || resp.Header.GetMemberId() != 1 {
		t.Fatalf("time to live through the leader = %v; want granted 30, 0 < TTL <= 30, from member 1", resp)
	}
	resp, err = follower.LeaseTimeToLive(testCtx(t), &pb.LeaseTimeToLiveRequest{ID: 8})
	if err != nil || resp.TTL != -1 {
		t.Fatalf("time to live of an unknown lease = %v, %v; want TTL -1", resp, err)
	}
}

func TestLeaseServiceForwardingNeedsALeader(t *testing.T) {
	m := newFakeLeaseMember(t, 2, 0)
	l := newTestLeaseService(t, m)
	if _, err := l.LeaseRenew(testCtx(t), 7); !errors.Is(err, errs.ErrNoLeader) {
		t.Fatalf("renew without a leader: %v, want ErrNoLeader", err)
	}
	if _, err := l.LeaseTimeToLive(testCtx(t), &pb.LeaseTimeToLiveRequest{ID: 7}); !errors.Is(err, errs.ErrNoLeader) {
		t.Fatalf("time to live without a leader: %v, want ErrNoLeader", err)
	}
}

// A leader renews without a quorum round while raft's loop ticks (raft's
// CheckQuorum steps it down once it is cut off); a leader whose loop is
// held up asks for one, and refuses to renew when it fails.
func TestLeaseServiceRenewChecksLeadershipOnlyWhenTheLoopStalls(t *testing.T) {
	tests := []struct {
		name      string
		stalled   bool
		readErr   error
		wantReads int
		wantErr   error
	}{
		{"loop ticks", false, errs.ErrTimeout, 0, nil},
		{"loop stalled, quorum confirms", true, nil, 1, nil},
		{"loop stalled, quorum lost", true, errs.ErrTimeout, 1, lease.ErrNotPrimary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leader, _ := leaderAndFollower(t)
			m := leader.member.(*fakeLeaseMember)
			m.stalled, m.readErr = tt.stalled, tt.readErr // lease 7 exists
			if _, err := leader.LeaseRenew(testCtx(t), 7); !errors.Is(err, tt.wantErr) {
				t.Fatalf("renew: %v, want %v", err, tt.wantErr)
			}
			if m.reads != tt.wantReads {
				t.Fatalf("%d quorum rounds, want %d", m.reads, tt.wantReads)
			}
		})
	}
}

func TestLeaseServicePeerEndpointsRefuseOnAFollower(t *testing.T) {
	_, follower := leaderAndFollower(t)
	url := servePeer(t, follower)
	body, _ := proto.Marshal(&pb.LeaseKeepAliveRequest{ID: 7})
	_, err := postProtobuf(testCtx(t), http.DefaultClient, url+leasesPath, body)
	if err == nil || errors.Is(err, errs.ErrLeaseNotFound) {
		t.Fatalf("keepalive posted to a follower: %v, want a refusal", err)
	}
}

var errNoUser = errors.New("no user")

func TestLeaseServiceGrantPicksAPositiveIDAndChecksAuthFirst(t *testing.T) {
	m := newFakeLeaseMember(t, 1, 1)
	l := newTestLeaseService(t, m)
	resp, err := l.LeaseGrant(testCtx(t), &pb.LeaseGrantRequest{TTL: 10})
	if err != nil {
		t.Fatal(err)
	}
	if resp.ID <= 0 || resp.Header.GetMemberId() != 1 || m.lessor.Lookup(lease.LeaseID(resp.ID)) == nil {
		t.Fatalf("grant = %v; want a positive ID, granted, with member 1's header", resp)
	}
	m.authErr = errNoUser
	if _, err := l.LeaseGrant(testCtx(t), &pb.LeaseGrantRequest{TTL: 10}); !errors.Is(err, errNoUser) {
		t.Fatalf("grant without auth: %v", err)
	}
	if len(m.proposed) != 1 {
		t.Fatalf("%d proposals, want 1: a refused grant must not be proposed", len(m.proposed))
	}
}

func TestLeaseServiceLeadershipLoopPromotesWhileLeading(t *testing.T) {
	m := newFakeLeaseMember(t, 1, 1)
	l := newTestLeaseService(t, m)
	stop := make(chan struct{})
	l.stop = stop
	done := make(chan struct{})
	go func() { l.leadershipLoop(); close(done) }()
	waitFor(t, "the lessor primary", m.lessor.IsPrimary)
	close(stop)
	<-done
}
