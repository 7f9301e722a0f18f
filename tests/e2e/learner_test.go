package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/cairnkv/cairn/tests/harness"
)

// Tests of cairn's learner extensions (--experimental-learner-*,
// --experimental-member-add-as-learner); etcd has none of them.

func skipOnReference(t *testing.T) {
	t.Helper()
	if os.Getenv(referenceEnv) == "etcd" {
		t.Skip("cairn extension: etcd has no such flags")
	}
}

// addMember adds a member through c.clients[via] with MemberAdd (as a
// learner when asLearner) and returns the new member's ID and whether the
// cluster made it a learner, and the --initial-cluster it must join with.
func (c *cluster) addMember(t *testing.T, via int, name, peerURL string, asLearner bool) (uint64, bool, string) {
	t.Helper()
	add := c.clients[via].MemberAdd
	if asLearner {
		add = c.clients[via].MemberAddAsLearner
	}
	// Learners too wait out the strict reconfiguration check: etcd refuses
	// any add until this member has been connected to a quorum for the
	// health interval.
	var resp *clientv3.MemberAddResponse
	retryReconfig(t, "member add "+name, func() (err error) {
		resp, err = add(ctx(t), []string{peerURL})
		return err
	})
	return resp.Member.ID, resp.Member.IsLearner, joinCluster(resp, name)
}

// joinCluster is the --initial-cluster a member added as name with resp
// joins with: every member's peer URLs, the new one under its name.
func joinCluster(resp *clientv3.MemberAddResponse, name string) string {
	var ic []string
	for _, m := range resp.Members {
		n := m.Name
		if m.ID == resp.Member.ID {
			n = name
		}
		for _, u := range m.PeerURLs {
			ic = append(ic, n+"="+u)
		}
	}
	return strings.Join(ic, ",")
}

// joinMember starts a member that was added with addMember, appends it to
// the cluster and returns its index.
func (c *cluster) joinMember(t *testing.T, name, peerURL, initialCluster string, id uint64, args ...string) int {
	t.Helper()
	i := c.prepareJoin(t, name, peerURL, initialCluster, id)
	m := c.members[i]
	m.args = append(m.args, args...)
	m.start()
	return i
}

// isLearner reports whether member id is a learner in the member list as
// c.clients[via] sees it.
func (c *cluster) isLearner(t *testing.T, via int, id uint64) bool {
	t.Helper()
	resp, err := c.clients[via].MemberList(ctx(t))
	if err != nil {
		t.Fatalf("member list: %s", describeErr(err))
	}
	for _, m := range resp.Members {
		if m.ID == id {
			return m.IsLearner
		}
	}
	t.Fatalf("member %x not in the member list", id)
	return false
}

// waitVoter waits until member id is a voter.
func (c *cluster) waitVoter(t *testing.T, via int, id uint64) {
	t.Helper()
	if !harness.Poll(clusterWait, 100*time.Millisecond, func() bool { return !c.isLearner(t, via, id) }) {
		t.Fatalf("member %x still a learner after %v", id, clusterWait)
	}
}

// writer puts keys through cli until stopped and counts failed puts: the
// cluster must keep its quorum throughout.
type writer struct{ *loadWriter }

func startWriter(cli *clientv3.Client) *writer {
	return &writer{startPacedWriter(cli, "writer/", 10*time.Millisecond)}
}

// stop stops the writer and fails t if any put failed.
func (w *writer) stop(t *testing.T) {
	t.Helper()
	w.loadWriter.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed > 0 {
		t.Fatalf("%d of %d writes failed, the cluster lost its quorum; first: %s", w.failed, w.failed+w.ok, w.first)
	}
}

// followerOtherThan returns a member index that is not the leader nor in
// skip.
func (c *cluster) followerOtherThan(leader int, skip ...int) int {
	for i := range c.members {
		if i != leader && !containsInt(skip, i) {
			return i
		}
	}
	c.t.Fatal("no such follower")
	return -1
}

// Learner by default: a member added with a wrong peer URL joins as a
// learner, so the quorum stays that of the three voters. Even with a voter
// down (a voter-add would have left 2 of 4 up: no quorum) writes go on, the
// bad member is removed, and a good member added afterwards is promoted
// automatically once every voter is back and healthy.
func TestLearnerByDefaultWrongPeerURL(t *testing.T) {
	skipOnReference(t)
	c := startCluster(t, clusterOpts{size: 3, args: []string{
		"--experimental-member-add-as-learner",
		"--experimental-learner-auto-promote-after", "1s",
	}})
	leader := c.waitLeader(c.all()...)
	down := c.followerOtherThan(leader)
	w := startWriter(c.clients[leader])
	w.waitProgress(t, 5)

	wrongURL := harness.FreeURL(t) // nobody listens
	badID, learner, _ := c.addMember(t, leader, "bad", wrongURL, false)
	if !learner {
		t.Fatal("member add made a voter under --experimental-member-add-as-learner")
	}
	w.waitProgress(t, 5)

	c.members[down].kill()
	w.waitProgress(t, 20)
	if !c.isLearner(t, leader, badID) {
		t.Fatal("the unreachable member was promoted")
	}
	if _, err := c.clients[leader].MemberRemove(ctx(t), badID); err != nil {
		t.Fatalf("removing the bad member: %s", describeErr(err))
	}
	w.waitProgress(t, 5)
	c.members[down].restart()
	c.waitLeader(c.all()...)

	goodURL := harness.FreeURL(t)
	goodID, learner, ic := c.addMember(t, leader, "good", goodURL, false)
	if !learner {
		t.Fatal("member add made a voter under --experimental-member-add-as-learner")
	}
	good := c.joinMember(t, "good", goodURL, ic, goodID,
		"--experimental-member-add-as-learner", "--experimental-learner-auto-promote-after", "1s")
	c.waitVoter(t, leader, goodID)
	w.waitProgress(t, 5)
	w.stop(t)

	c.waitLeader(c.all()...)
	mustPut(t, c.clients[good], "via-good", "v")
	c.assertConsistent(t, c.all()...)
}

// A read-only learner serves serializable and linearizable reads and
// Watch, refuses writes, reports itself in Status, and is not promoted
// automatically while an ordinary learner next to it is.
func TestLearnerReadOnly(t *testing.T) {
	skipOnReference(t)
	c := startCluster(t, clusterOpts{size: 3, args: []string{
		"--experimental-learner-auto-promote",
		"--experimental-learner-auto-promote-after", "1s",
		"--max-learners", "2",
	}})
	leader := c.waitLeader(c.all()...)

	roURL := harness.FreeURL(t)
	roID, learner, ic := c.addMember(t, leader, "ro", roURL, true)
	if !learner {
		t.Fatal("member add --learner made a voter")
	}
	ro := c.joinMember(t, "ro", roURL, ic, roID, "--experimental-learner-read-only", "--max-learners", "2")
	roCli := c.clients[ro]

	// Linearizable: a write acknowledged by a voter is read right away.
	for n := range 5 {
		val := fmt.Sprint(n)
		mustPut(t, c.clients[n%3], "lin", val)
		resp, err := roCli.Get(ctx(t), "lin")
		if err != nil {
			t.Fatalf("linearizable read on the read-only learner: %s", describeErr(err))
		}
		if got := kvPairs(resp.Kvs); got != "lin="+val {
			t.Fatalf("linearizable read on the read-only learner: %s, want lin=%s", got, val)
		}
	}
	resp, err := roCli.Get(ctx(t), "lin", clientv3.WithSerializable())
	must(t, err)
	if len(resp.Kvs) != 1 {
		t.Fatalf("serializable read: %v", resp.Kvs)
	}

	// Watch.
	wctx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	wch := roCli.Watch(wctx, "watched", clientv3.WithRev(resp.Header.Revision+1))
	rev := mustPut(t, c.clients[leader], "watched", "w1")
	select {
	case wr := <-wch:
		if err := wr.Err(); err != nil {
			t.Fatalf("watch on the read-only learner: %s", describeErr(err))
		}
		if len(wr.Events) != 1 || string(wr.Events[0].Kv.Value) != "w1" || wr.Events[0].Kv.ModRevision != rev {
			t.Fatalf("watch events %v, want watched=w1 at %d", wr.Events, rev)
		}
	case <-time.After(clusterWait):
		t.Fatal("no watch event from the read-only learner")
	}

	// Writes are refused.
	errLearner := rpctypes.Error(rpctypes.ErrGRPCNotSupportedForLearner)
	_, err = roCli.Put(ctx(t), "k", "v")
	wantErr(t, err, errLearner)
	_, err = roCli.Delete(ctx(t), "lin")
	wantErr(t, err, errLearner)
	_, err = roCli.Txn(ctx(t)).Then(clientv3.OpPut("k", "v")).Commit()
	wantErr(t, err, errLearner)
	_, err = roCli.Grant(ctx(t), 10)
	wantErr(t, err, errLearner)

	// Status reports it.
	var md metadata.MD
	st, err := pb.NewMaintenanceClient(roCli.ActiveConnection()).Status(ctx(t), &pb.StatusRequest{}, grpc.Header(&md))
	must(t, err)
	if !st.IsLearner || strings.Join(md.Get("cairn-learner-read-only"), ",") != "true" {
		t.Fatalf("status: isLearner %v, read-only header %q", st.IsLearner, md.Get("cairn-learner-read-only"))
	}
	md = nil
	if _, err := pb.NewMaintenanceClient(c.clients[leader].ActiveConnection()).Status(ctx(t), &pb.StatusRequest{}, grpc.Header(&md)); err != nil {
		t.Fatal(err)
	}
	if v := md.Get("cairn-learner-read-only"); len(v) != 0 {
		t.Fatalf("a voter reports itself read-only: %q", v)
	}

	// An ordinary learner added after it is promoted; the read-only one,
	// which had every chance before, is not.
	plainURL := harness.FreeURL(t)
	plainID, _, ic := c.addMember(t, leader, "plain", plainURL, true)
	c.joinMember(t, "plain", plainURL, ic, plainID, "--max-learners", "2")
	c.waitVoter(t, leader, plainID)
	if !c.isLearner(t, leader, roID) {
		t.Fatal("the read-only learner was promoted automatically")
	}
	resp, err = roCli.Get(ctx(t), "watched")
	must(t, err)
	if got := kvPairs(resp.Kvs); got != "watched=w1" {
		t.Fatalf("read-only learner reads %s", got)
	}
}

// Standby failover: with three voters and a standby learner, a voter that
// stays down leaves the cluster with no failure to spare; the leader then
// promotes the standby and removes the dead voter, and writes never fail.
func TestLearnerStandbyFailover(t *testing.T) {
	skipOnReference(t)
	c := startCluster(t, clusterOpts{size: 3, args: []string{
		"--experimental-learner-standby-failover-after", "2s",
	}})
	leader := c.waitLeader(c.all()...)
	standbyURL := harness.FreeURL(t)
	standbyID, _, ic := c.addMember(t, leader, "standby", standbyURL, true)
	standby := c.joinMember(t, "standby", standbyURL, ic, standbyID,
		"--experimental-learner-standby-failover-after", "2s", "--experimental-learner-no-auto-promote")
	w := startWriter(c.clients[leader])
	w.waitProgress(t, 20)
	if !c.isLearner(t, leader, standbyID) {
		t.Fatal("the standby was promoted while every voter was up")
	}

	down := c.followerOtherThan(leader, standby)
	c.members[down].kill()
	c.waitVoter(t, leader, standbyID)
	var members []*pb.Member
	if !harness.Poll(clusterWait, 100*time.Millisecond, func() bool {
		resp, err := c.clients[leader].MemberList(ctx(t))
		must(t, err)
		members = resp.Members
		removed := true
		for _, m := range members {
			removed = removed && m.ID != c.ids[down]
		}
		return removed && len(members) == 3
	}) {
		t.Fatalf("the dead voter was not removed: %v", members)
	}
	w.waitProgress(t, 20)
	w.stop(t)
	mustPut(t, c.clients[standby], "via-standby", "v")
	c.assertConsistent(t, c.except(down)...)
}
