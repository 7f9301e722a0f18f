package e2e

import (
	"os"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tests/harness"
)

// TestForceNewCluster loses quorum for good (every member killed, two data
// dirs deleted) and recovers the third member's data with
// --force-new-cluster: every acknowledged write is there, the member list
// holds one member, it takes writes, and a new member can join it.
func TestForceNewCluster(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})
	c.waitLeader(c.all()...)
	acked := writeAcked(t, c, 0, "fnc", 50)
	// m2 must have the last write on disk as committed (it learns the
	// commit index from the leader's next heartbeat): --force-new-cluster
	// keeps only what the surviving member knows was committed.
	c.syncRead(t, 2)
	time.Sleep(500 * time.Millisecond)
	for _, i := range c.all() {
		c.members[i].kill()
	}
	for _, i := range []int{0, 1} {
		if err := os.RemoveAll(c.members[i].dataDir); err != nil {
			t.Fatal(err)
		}
	}
	m := c.members[2]
	m.args = append(m.args, "--force-new-cluster")
	c.restartMembers(t, 2)

	assertAcked(t, c, 2, acked)
	resp, err := c.clients[2].MemberList(ctx(t))
	must(t, err)
	if len(resp.Members) != 1 || resp.Members[0].ID != c.ids[2] {
		t.Fatalf("member list after --force-new-cluster: %v, want only m2 (%x)", resp.Members, c.ids[2])
	}
	if _, err := c.clients[2].Put(ctx(t), "fnc/after", "x"); err != nil {
		t.Fatalf("put after --force-new-cluster: %s", describeErr(err))
	}

	// A restart without the flag keeps the one-member cluster.
	must(t, m.stop())
	m.args = m.args[:len(m.args)-1]
	c.restartMembers(t, 2)
	assertAcked(t, c, 2, acked)

	// Grow again: a new member joins and receives everything.
	peerURL := harness.FreeURL(t)
	id, _, ic := c.addMember(t, 2, "m3", peerURL, false)
	j := c.joinMember(t, "m3", peerURL, ic, id)
	if !harness.Poll(clusterWait, 100*time.Millisecond, func() bool {
		r, getErr := c.clients[j].Get(ctx(t), "fnc/after")
		err = getErr
		return getErr == nil && len(r.Kvs) == 1
	}) {
		t.Fatalf("new member never caught up: %v", err)
	}
	assertAcked(t, c, j, acked)
	if _, err := c.clients[j].Put(ctx(t), "fnc/two", "y"); err != nil {
		t.Fatalf("put on the two-member cluster: %s", describeErr(err))
	}
}
