package dashboard

import (
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestRoleOf(t *testing.T) {
	tests := []struct {
		m      *pb.Member
		leader uint64
		want   string
	}{
		{&pb.Member{ID: 1}, 1, "leader"},
		{&pb.Member{ID: 2}, 1, "follower"},
		{&pb.Member{ID: 3, IsLearner: true}, 1, "learner"},
		{&pb.Member{ID: 2}, 0, "follower"},
	}
	for _, tt := range tests {
		if got := roleOf(tt.m, tt.leader); got != tt.want {
			t.Errorf("roleOf(%v, %d) = %s, want %s", tt.m, tt.leader, got, tt.want)
		}
	}
}

func TestCatchUpOf(t *testing.T) {
	commit := uint64(1000)
	leaderView := raft.Status{Progress: map[uint64]tracker.Progress{7: {Match: 850}}}
	leaderView.RaftState = raft.StateLeader
	leaderView.HardState = &raftpb.HardState{Commit: &commit}
	local := &pb.StatusResponse{RaftIndex: 200}
	tests := []struct {
		name    string
		v       memberView
		rs      raft.Status
		want    float64
		ready   bool
		missing bool
	}{
		{name: "leader's progress", rs: leaderView, want: 85},
		{name: "elsewhere: the learner's applied index", v: memberView{Reachable: true, AppliedIndex: 190}, want: 95, ready: true},
		{name: "ahead of what this member saw", v: memberView{Reachable: true, AppliedIndex: 400}, want: 100, ready: true},
		{name: "unreachable and not on the leader", missing: true},
	}
	for _, tt := range tests {
		got := catchUpOf(7, tt.v, tt.rs, local)
		if tt.missing {
			if got != nil {
				t.Errorf("%s: %+v, want none", tt.name, got)
			}
			continue
		}
		if got == nil || got.Percent != tt.want || got.Ready != tt.ready || got.Threshold != 90 {
			t.Errorf("%s: %+v, want %v%% ready=%v of 90", tt.name, got, tt.want, tt.ready)
		}
	}
}

func TestBuildMemberStatusErrors(t *testing.T) {
	local := &pb.StatusResponse{Header: &pb.ResponseHeader{MemberId: 1}, Leader: 1}
	m := &pb.Member{ID: 2, Name: "m2"}
	tests := []struct {
		name               string
		err                error
		reachable, refused bool
		errorMentions      string
	}{
		{"down", status.Error(codes.Unavailable, "connection refused"), false, false, "unreachable: connection refused"},
		{"token refused", status.Error(codes.Unauthenticated, "etcdserver: invalid auth token"), true, true, "refused the token"},
		{"no dialable URL", errNoDialableURL, false, false, "no client URL"},
	}
	for _, tt := range tests {
		v := buildMember(m, statusResult{err: tt.err}, local, raft.Status{}, nil)
		if v.Reachable != tt.reachable || v.TokenRefused != tt.refused || v.Healthy || !strings.Contains(v.Error, tt.errorMentions) {
			t.Errorf("%s: %+v, want reachable=%v refused=%v, unhealthy, error mentioning %q", tt.name, v, tt.reachable, tt.refused, tt.errorMentions)
		}
	}
}
