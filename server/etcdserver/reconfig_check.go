package etcdserver

import (
	"time"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/membership"
)

// The checks of --strict-reconfig-check, as etcd makes them before it
// proposes a membership change. Two notions of health take part:
//
//   - started: a voter that has a name, i.e. one from --initial-cluster or
//     one that has published itself since its add. A member added but
//     never started has none. A stopped member that once started counts.
//   - connected: this member, or a peer whose connection to this member
//     has been up for healthInterval.
//
// Removing a voter whose connection is down is always safe for the active
// quorum, so only the started rule applies to it: a failed member can be
// removed at once, however recently the others reconnected.

// healthInterval is how long a peer must have been connected to count as
// connected (etcd's value).
const healthInterval = 5 * time.Second

func votersOf(members []*membership.Member) []*membership.Member {
	var out []*membership.Member
	for _, m := range members {
		if !m.IsLearner {
			out = append(out, m)
		}
	}
	return out
}

func started(m *membership.Member) bool { return m.Name != "" }

// countConnected counts the members among ms that are self or whose
// connection has been active since before since.
func countConnected(ms []*membership.Member, self uint64, since time.Time, activeSince func(uint64) time.Time) int {
	n := 0
	for _, m := range ms {
		if t := activeSince(m.ID); m.ID == self || (!t.IsZero() && t.Before(since)) {
			n++
		}
	}
	return n
}

// startedVoters counts the voters of members other than except (0: none)
// and how many of them have started.
func startedVoters(members []*membership.Member, except uint64) (n, up int) {
	for _, m := range votersOf(members) {
		if m.ID == except {
			continue
		}
		n++
		if started(m) {
			up++
		}
	}
	return n, up
}

// readyToAddVoter: with one more (not started) voter, the started voters
// are still a quorum. Adding a second member to a one-member cluster is
// allowed (etcd's restore procedure does it).
func readyToAddVoter(members []*membership.Member) bool {
	n, up := startedVoters(members, 0)
	n++
	return (up == 1 && n == 2) || up >= n/2+1
}

// readyToRemoveVoter: without voter id, the started voters left are a
// quorum of the voters left.
func readyToRemoveVoter(members []*membership.Member, id uint64) bool {
	n, up := startedVoters(members, id)
	return up >= n/2+1
}

// readyToPromote: with the learner counted as a started voter, the started
// voters are a quorum.
func readyToPromote(members []*membership.Member) bool {
	n, up := startedVoters(members, 0)
	return up+1 >= (n+1)/2+1
}

// mayAddMember checks an add: a voter only if readyToAddVoter, and any
// member only while this member has been connected to a quorum of the
// voters there will be, not counting the new one.
func mayAddMember(members []*membership.Member, learner bool, self uint64, activeSince func(uint64) time.Time, now time.Time) error {
	if !learner && !readyToAddVoter(members) {
		return errs.ErrNotEnoughStartedMembers
	}
	voters := votersOf(members)
	if len(voters) > 1 && countConnected(voters, self, now.Add(-healthInterval), activeSince) < (len(voters)+1)/2+1 {
		return errs.ErrUnhealthy
	}
	return nil
}

// mayRemoveMember checks the removal of member id: a learner may always
// go; a voter only if readyToRemoveVoter, and, unless its connection is
// down, only if the connected voters without it are a quorum.
func mayRemoveMember(members []*membership.Member, id, self uint64, activeSince func(uint64) time.Time, now time.Time) error {
	for _, m := range members {
		if m.ID == id && m.IsLearner {
			return nil
		}
	}
	if !readyToRemoveVoter(members, id) {
		return errs.ErrNotEnoughStartedMembers
	}
	if id != self && activeSince(id).IsZero() {
		return nil
	}
	voters := votersOf(members)
	if countConnected(voters, self, now.Add(-healthInterval), activeSince)-1 < 1+(len(voters)-1)/2 {
		return errs.ErrUnhealthy
	}
	return nil
}
