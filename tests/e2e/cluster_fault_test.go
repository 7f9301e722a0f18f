package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/tests/harness"
)

// quorumLossErrs are the errors etcd gives for a request that cannot reach
// a quorum (besides the client's own deadline).
var quorumLossErrs = []error{
	rpctypes.ErrTimeout,
	rpctypes.ErrTimeoutDueToLeaderFail,
	rpctypes.ErrTimeoutDueToConnectionLost,
	rpctypes.ErrLeaderChanged,
	rpctypes.ErrNoLeader,
}

// isQuorumLossErr reports whether err is how etcd fails a request on a
// member cut off from the quorum.
func isQuorumLossErr(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
		return true
	}
	for _, want := range quorumLossErrs {
		if sameErr(err, want) {
			return true
		}
	}
	return false
}

// mustFailOnIsolated checks that a request to an isolated member fails and
// did not return data: a linearizable read that succeeded there could only
// be stale, and a write cannot commit without a quorum. The errors must be
// etcd's: on a member that knows no leader etcd holds a proposal until a
// leader appears or the request times out, it does not reject it at once.
func mustFailOnIsolated(t *testing.T, c *cluster, i int, key, newValue string) {
	t.Helper()
	cctx, cancel := context.WithTimeout(context.Background(), failTimeout)
	resp, err := c.clients[i].Get(cctx, key)
	cancel()
	if err == nil {
		t.Errorf("linearizable Get %q on isolated m%d succeeded (revision %d, %s; the majority has %s=%s): stale read",
			key, i, resp.Header.Revision, kvPairs(resp.Kvs), key, newValue)
	} else if !isQuorumLossErr(err) {
		t.Errorf("linearizable Get on isolated m%d failed with %s, want a timeout (deadline exceeded, %q) or leader loss error", i, describeErr(err), rpctypes.ErrTimeout)
	} else {
		t.Logf("linearizable Get on isolated m%d: %s", i, describeErr(err))
	}
	cctx, cancel = context.WithTimeout(context.Background(), failTimeout)
	presp, err := c.clients[i].Put(cctx, key, "written-on-isolated-member")
	cancel()
	if err == nil {
		t.Errorf("Put on isolated m%d succeeded at revision %d without a quorum", i, presp.Header.Revision)
	} else if !isQuorumLossErr(err) {
		t.Errorf("Put on isolated m%d failed with %s, want a timeout (deadline exceeded, %q) or leader loss error", i, describeErr(err), rpctypes.ErrTimeout)
	} else {
		t.Logf("Put on isolated m%d: %s", i, describeErr(err))
	}
}

// TestClusterPartitionedLeader cuts the leader off: the majority elects a
// new leader and keeps accepting writes, the old leader neither serves
// linearizable reads nor commits writes, and after healing it catches up.
func TestClusterPartitionedLeader(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3, proxies: true})
	old := c.waitLeader(c.all()...)
	mustPut(t, c.clients[old], "k", "before")
	for i := range c.members {
		c.waitValue(t, i, "k", "before")
	}

	c.isolate(old)
	majority := c.except(old)
	nl := c.waitLeader(majority...)
	t.Logf("isolated leader m%d; m%d leads the majority", old, nl)
	mustPut(t, c.clients[majority[0]], "k", "after")
	for n := range 20 {
		mustPut(t, c.clients[majority[n%2]], fmt.Sprintf("more/%02d", n), "x")
	}
	for _, i := range majority {
		c.waitValue(t, i, "k", "after")
	}
	mustFailOnIsolated(t, c, old, "k", "after")
	if t.Failed() {
		t.FailNow()
	}

	c.heal(old)
	c.waitValue(t, old, "k", "after")
	if l := c.waitLeader(c.all()...); l == old {
		// Allowed by raft, but only after the old leader caught up.
		t.Logf("m%d leads again after healing", old)
	}
	resp, err := c.clients[old].Get(ctx(t), "more/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	must(t, err)
	if resp.Count != 20 {
		t.Errorf("healed m%d has %d of the 20 keys written while it was cut off", old, resp.Count)
	}
	c.assertConsistent(t, c.all()...)
}

// TestClusterMinorityPartition cuts two of five members (the leader among
// them) off: the three others elect a leader and serve reads and writes,
// the cut-off ones serve neither, and after healing all five agree.
func TestClusterMinorityPartition(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 5, proxies: true})
	l := c.waitLeader(c.all()...)
	minority := []int{l, c.except(l)[0]}
	majority := c.except(minority...)
	for _, i := range minority {
		c.isolate(i)
	}
	nl := c.waitLeader(majority...)
	t.Logf("isolated m%d and m%d; m%d leads the majority %v", minority[0], minority[1], nl, majority)

	for n := range 30 {
		mustPut(t, c.clients[majority[n%len(majority)]], fmt.Sprintf("maj/%02d", n), fmt.Sprint(n))
	}
	for _, i := range majority {
		resp, err := c.clients[i].Get(ctx(t), "maj/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		must(t, err)
		if resp.Count != 30 {
			t.Errorf("majority member m%d reads %d of 30 keys", i, resp.Count)
		}
	}
	for _, i := range minority {
		mustFailOnIsolated(t, c, i, "maj/29", "29")
	}
	if t.Failed() {
		t.FailNow()
	}

	for _, i := range minority {
		c.heal(i)
	}
	for _, i := range minority {
		c.waitValue(t, i, "maj/29", "29")
	}
	c.waitLeader(c.all()...)
	c.assertConsistent(t, c.all()...)
}

// TestClusterSnapshotCatchUp stops a follower while the others write far
// more than --snapshot-count entries, so the leader compacts its log past
// the follower's position; the restarted follower is sent a snapshot and
// ends up with identical data.
func TestClusterSnapshotCatchUp(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3, args: []string{"--snapshot-count", "100", "--snapshot-catchup-entries", "10"}})
	l := c.waitLeader(c.all()...)
	f := c.except(l)[0]
	mustPut(t, c.clients[l], "early", "1")
	c.waitValue(t, f, "early", "1")
	if _, err := c.sigterm(f); err != nil {
		t.Fatalf("stopping m%d: %v", f, err)
	}

	const writes = 500
	putConcurrently(t, c.clients[l], "bulk/", writes)

	c.members[f].restart()
	c.waitValue(t, f, fmt.Sprintf("bulk/%03d", writes-1), strings.Repeat("v", 100))
	c.waitLeader(c.all()...)
	resp, err := c.clients[f].Get(ctx(t), "bulk/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	must(t, err)
	if resp.Count != writes {
		t.Errorf("restarted m%d has %d of %d keys", f, resp.Count, writes)
	}
	c.assertConsistent(t, c.all()...)
	if log := logSince(t, c.members[f]); !strings.Contains(log, "applied snapshot") {
		t.Errorf("restarted m%d did not log applying a snapshot from the leader; its log since restart:\n%s", f, log)
	}
	assertSnapshotTransferMetrics(t, c, l, f)
}

// TestClusterGracefulStopLeaderTransfer SIGTERMs the leader of a cluster
// with a long election timeout. A leader that stops gracefully hands its
// leadership to a follower before exiting, so a new leader is in place
// when the process is gone; without the hand-over the followers would keep
// naming the dead leader for at least an election timeout (3 s here).
func TestClusterGracefulStopLeaderTransfer(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3, electionMs: 3000})
	l := c.waitLeader(c.all()...)
	mustPut(t, c.clients[l], "k", "v")
	rest := c.except(l)

	start := time.Now()
	took, err := c.sigterm(l)
	if err != nil {
		t.Errorf("SIGTERM of leader m%d: %v", l, err)
	}
	seen := c.leaders(rest, time.Second)
	t.Logf("leader m%d exited %v after SIGTERM; right after, the others name leaders %x (old leader %x)", l, took, seen, c.ids[l])
	handedOver := false
	for k, id := range seen {
		if id == c.ids[l] {
			t.Errorf("m%d still names the stopped m%d as leader: leadership was not handed over on graceful stop", rest[k], l)
		}
		if containsInt(rest, c.index(id)) {
			handedOver = true
		}
	}
	if !handedOver {
		t.Errorf("no surviving member is leader when the old leader has exited (reported %x)", seen)
	}
	nl := c.waitLeader(rest...)
	t.Logf("m%d leads %v after SIGTERM", nl, time.Since(start))
	mustPut(t, c.clients[nl], "k", "v2")
	c.waitValue(t, rest[0], "k", "v2")
	c.waitValue(t, rest[1], "k", "v2")
}

// TestClusterForeignMember puts a member of another cluster where a
// cluster member used to be: m2 of cluster A stops and a fresh member
// bootstrapped as its own cluster (different token, so different member
// and cluster IDs) takes its addresses. A's members reach it but their
// requests are refused for the cluster ID mismatch: it neither joins A nor
// takes A's data, and A goes on with its two members. When the real m2
// comes back it rejoins and catches up.
func TestClusterForeignMember(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})
	mustPut(t, c.clients[0], "a", "cluster-a")
	for i := range c.members {
		c.waitValue(t, i, "a", "cluster-a")
	}
	aStatus, err := c.status(0, requestTimeout)
	must(t, err)
	const victim = 2
	if _, err := c.sigterm(victim); err != nil {
		t.Fatalf("stopping m%d: %v", victim, err)
	}
	m := c.members[victim]
	foreign := &member{
		t:         t,
		name:      m.name,
		dataDir:   t.TempDir() + "/foreign.etcd",
		clientURL: m.clientURL,
		peerURL:   m.peerURL,
		logPath:   t.TempDir() + "/foreign.log",
		bin:       m.bin,
	}
	foreign.args = []string{
		"--name", m.name,
		"--data-dir", foreign.dataDir,
		"--listen-client-urls", m.clientURL,
		"--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", m.peerURL,
		"--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", m.name + "=" + m.peerURL,
		"--initial-cluster-token", "some-other-cluster",
		"--initial-cluster-state", "new",
		"--heartbeat-interval", "50",
		"--election-timeout", "500",
	}
	t.Cleanup(func() {
		if foreign.running() {
			if err := gracefulExit(foreign.stop()); err != nil {
				t.Errorf("stopping foreign member: %v", err)
			}
		}
		if t.Failed() {
			foreign.dumpLog()
		}
	})
	foreign.start()
	fcli := foreign.client(t)

	// A keeps working with two members and keeps sending to m2's address.
	mustPut(t, c.clients[0], "a2", "while-foreign")
	for n := range 10 {
		mustPut(t, c.clients[n%2], fmt.Sprintf("a/%d", n), "x")
	}
	fs, err := fcli.Status(ctx(t), foreign.clientURL)
	must(t, err)
	if fs.Header.ClusterId == aStatus.Header.ClusterId {
		t.Fatalf("foreign member reports A's cluster ID %x", fs.Header.ClusterId)
	}
	if fs.Leader != fs.Header.MemberId {
		t.Errorf("foreign single member names leader %x, itself %x", fs.Leader, fs.Header.MemberId)
	}
	ml, err := fcli.MemberList(ctx(t))
	must(t, err)
	if len(ml.Members) != 1 || ml.Members[0].ID != fs.Header.MemberId {
		t.Errorf("foreign member lists members %v, want only itself", ml.Members)
	}
	resp, err := fcli.Get(ctx(t), "a", clientv3.WithPrefix())
	must(t, err)
	if len(resp.Kvs) != 0 {
		t.Errorf("foreign member has A's data: %s", kvPairs(resp.Kvs))
	}
	aml, err := c.clients[0].MemberList(ctx(t))
	must(t, err)
	if len(aml.Members) != 3 {
		t.Errorf("cluster A lists %d members", len(aml.Members))
	}

	// The refusal must be visible in the logs: the foreign member rejects
	// A's raft traffic, or A's members are told their requests were
	// refused, for the cluster ID mismatch.
	if !harness.Poll(clusterWait, 100*time.Millisecond, func() bool {
		logs := strings.ToLower(logSince(t, foreign) + logSince(t, c.members[0]) + logSince(t, c.members[1]))
		return strings.Contains(logs, "cluster id mismatch") || strings.Contains(logs, "cluster-id mismatch")
	}) {
		t.Fatalf("no cluster ID mismatch logged by the foreign member or by A's members within %v", clusterWait)
	}

	if err := gracefulExit(foreign.stop()); err != nil {
		t.Errorf("stopping foreign member: %v", err)
	}
	c.members[victim].restart()
	c.waitValue(t, victim, "a2", "while-foreign")
	c.waitLeader(c.all()...)
	c.assertConsistent(t, c.all()...)
}

// TestClusterRestartWithOtherInitialCluster restarts a member on its data
// dir with the --initial-cluster and --initial-cluster-token of another
// cluster. The data dir decides: the bootstrap flags only apply to a new
// member, so it comes back as the same member of its own cluster.
func TestClusterRestartWithOtherInitialCluster(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})
	mustPut(t, c.clients[0], "a", "1")
	const victim = 2
	before, err := c.status(victim, requestTimeout)
	must(t, err)
	if _, err := c.sigterm(victim); err != nil {
		t.Fatalf("stopping m%d: %v", victim, err)
	}
	mustPut(t, c.clients[0], "a", "2")

	m := c.members[victim]
	other := fmt.Sprintf("%s=%s,x1=http://127.0.0.1:%d,x2=http://127.0.0.1:%d", m.name, m.peerURL, harness.FreePort(t), harness.FreePort(t))
	var args []string
	for k := 0; k < len(m.args); k++ {
		switch m.args[k] {
		case "--initial-cluster":
			args = append(args, m.args[k], other)
			k++
		case "--initial-cluster-token":
			args = append(args, m.args[k], "some-other-cluster")
			k++
		default:
			args = append(args, m.args[k])
		}
	}
	m.args = args
	m.restart()
	c.waitValue(t, victim, "a", "2")
	after, err := c.status(victim, requestTimeout)
	must(t, err)
	if after.Header.ClusterId != before.Header.ClusterId || after.Header.MemberId != before.Header.MemberId {
		t.Errorf("after restart with another --initial-cluster: cluster %x member %x, before cluster %x member %x",
			after.Header.ClusterId, after.Header.MemberId, before.Header.ClusterId, before.Header.MemberId)
	}
	c.waitLeader(c.all()...)
	c.assertConsistent(t, c.all()...)
}

// assertSnapshotTransferMetrics checks that the snapshot leader l sent to
// follower f shows in both members' metrics, and that nothing is left in
// flight.
func assertSnapshotTransferMetrics(t *testing.T, c *cluster, l, f int) {
	t.Helper()
	sender := parseExposition(t, scrapeText(t, c.members[l].clientURL))
	receiver := parseExposition(t, scrapeText(t, c.members[f].clientURL))
	to, from := fmt.Sprintf(`To="%x"`, c.ids[f]), fmt.Sprintf(`From="%x"`, c.ids[l])
	for _, tc := range []struct {
		e      exposition
		series string
		min    float64
	}{
		{sender, "etcd_network_snapshot_send_success{" + to + "}", 1},
		{sender, "etcd_network_snapshot_send_total_duration_seconds_count{" + to + "}", 1},
		{sender, "etcd_disk_backend_snapshot_duration_seconds_count", 1},
		{receiver, "etcd_network_snapshot_receive_success{" + from + "}", 1},
		{receiver, "etcd_network_snapshot_receive_total_duration_seconds_count{" + from + "}", 1},
		{receiver, "etcd_snap_db_save_total_duration_seconds_count", 1},
	} {
		if v := tc.e.get(t, tc.series); v < tc.min {
			t.Errorf("%s = %v, want at least %v", tc.series, v, tc.min)
		}
	}
	for _, series := range []string{"etcd_network_snapshot_send_inflights_total{" + to + "}"} {
		if v := sender.get(t, series); v != 0 {
			t.Errorf("%s = %v after the transfer", series, v)
		}
	}
	if v := receiver.get(t, "etcd_server_snapshot_apply_in_progress_total"); v != 0 {
		t.Errorf("snapshot_apply_in_progress_total = %v after the snapshot was applied", v)
	}
}
