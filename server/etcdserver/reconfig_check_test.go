package etcdserver

import (
	"errors"
	"testing"
	"time"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/membership"
)

// The strict reconfiguration checks against etcd's rules. The member
// being replaced in a three-member cluster must be removable at once
// when it is down, even though another member reconnected a moment ago:
// cairn used to count only peers connected for healthInterval as started
// and refused that removal with "not enough started members".
func TestStrictReconfigChecks(t *testing.T) {
	const self, b, c, d = 1, 2, 3, 4
	now := time.Unix(1000, 0)
	long, recent := now.Add(-time.Minute), now.Add(-time.Second)
	voter := func(id uint64) *membership.Member {
		return &membership.Member{ID: id, Name: "m", PeerURLs: []string{"http://x"}}
	}
	unstarted := &membership.Member{ID: d, PeerURLs: []string{"http://d"}}
	learner := &membership.Member{ID: d, Name: "l", IsLearner: true}
	three := []*membership.Member{voter(self), voter(b), voter(c)}
	withUnstarted := append(append([]*membership.Member{}, three...), unstarted)
	withLearner := append(append([]*membership.Member{}, three...), learner)
	type since map[uint64]time.Time
	for _, tc := range []struct {
		name    string
		op      string // add, add-learner, remove, promote
		members []*membership.Member
		id      uint64 // removed
		active  since
		want    error
	}{
		{"remove a down voter while another just reconnected", "remove", three, c, since{b: recent}, nil},
		{"remove a down voter, all long connected", "remove", three, c, since{b: long}, nil},
		{"remove a connected voter, the other just reconnected", "remove", three, c, since{b: recent, c: long}, errs.ErrUnhealthy},
		{"remove a connected voter, all long connected", "remove", three, c, since{b: long, c: long}, nil},
		{"remove self, all long connected", "remove", three, self, since{b: long, c: long}, nil},
		{"remove self, one peer down", "remove", three, self, since{b: long}, errs.ErrUnhealthy},
		{"remove the last voter", "remove", three[:1], self, nil, errs.ErrNotEnoughStartedMembers},
		{"remove a voter, leaving unstarted ones", "remove", []*membership.Member{voter(self), voter(b), {ID: c}, {ID: d}}, b, since{}, errs.ErrNotEnoughStartedMembers},
		{"remove a learner", "remove", withLearner, d, nil, nil},
		{"add a voter, all long connected", "add", three, 0, since{b: long, c: long}, nil},
		{"add a voter, one peer down", "add", three, 0, since{b: long}, errs.ErrUnhealthy},
		{"add a voter, one peer just reconnected", "add", three, 0, since{b: long, c: recent}, errs.ErrUnhealthy},
		{"add a voter after an unstarted one", "add", withUnstarted, 0, since{b: long, c: long}, nil},
		{"add a voter to one member", "add", three[:1], 0, nil, nil},
		{"add a second voter after an unstarted one", "add", []*membership.Member{voter(self), unstarted}, 0, since{d: long}, errs.ErrNotEnoughStartedMembers},
		{"add a learner, one peer down", "add-learner", three, 0, since{b: long}, errs.ErrUnhealthy},
		{"add a learner, two peers down", "add-learner", withUnstarted, 0, since{}, errs.ErrUnhealthy},
		{"promote", "promote", withLearner, 0, nil, nil},
		{"promote with too few started", "promote", []*membership.Member{voter(self), {ID: b}, {ID: c}, learner}, 0, nil, errs.ErrNotEnoughStartedMembers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			activeSince := func(id uint64) time.Time { return tc.active[id] }
			var err error
			switch tc.op {
			case "add", "add-learner":
				err = mayAddMember(tc.members, tc.op == "add-learner", self, activeSince, now)
			case "remove":
				err = mayRemoveMember(tc.members, tc.id, self, activeSince, now)
			case "promote":
				if !readyToPromote(tc.members) {
					err = errs.ErrNotEnoughStartedMembers
				}
			}
			if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}
