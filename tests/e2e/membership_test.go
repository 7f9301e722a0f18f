package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/tests/harness"
)

// Runtime reconfiguration under load, with the official client: growing and
// shrinking a cluster, replacing a failed member, learner refusals and the
// promotion rule, and how long a new member takes to catch up.

// loadWriter puts unique keys through one client until stopped. It records
// every acknowledged put and counts failures per phase, together with the
// longest stretch without an acknowledged put: an availability report for
// each reconfiguration.
type loadWriter struct {
	stopc chan struct{}
	done  sync.WaitGroup

	mu     sync.Mutex
	acked  map[string]string
	ok     int
	failed int
	errs   map[string]int // error description -> count, this phase
	first  string         // the first failed put's error
	lastOK time.Time
	maxGap time.Duration // longest time without an acknowledged put, this phase
}

func startLoadWriter(cli *clientv3.Client, prefix string) *loadWriter {
	return startPacedWriter(cli, prefix, 2*time.Millisecond)
}

// startPacedWriter is startLoadWriter pausing pace between puts.
func startPacedWriter(cli *clientv3.Client, prefix string, pace time.Duration) *loadWriter {
	w := &loadWriter{stopc: make(chan struct{}), acked: map[string]string{}, errs: map[string]int{}, lastOK: time.Now()}
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		for n := 0; ; n++ {
			select {
			case <-w.stopc:
				return
			default:
			}
			key, val := fmt.Sprintf("%s%07d", prefix, n), strconv.Itoa(n)
			cctx, cancel := context.WithTimeout(context.Background(), failTimeout)
			_, err := cli.Put(cctx, key, val)
			cancel()
			now := time.Now()
			w.mu.Lock()
			if err != nil {
				w.failed++
				w.errs[describeErr(err)]++
				if w.first == "" {
					w.first = describeErr(err)
				}
			} else {
				w.ok++
				w.acked[key] = val
				w.maxGap = max(w.maxGap, now.Sub(w.lastOK))
				w.lastOK = now
			}
			w.mu.Unlock()
			time.Sleep(pace)
		}
	}()
	return w
}

// counts returns the puts acknowledged and failed so far.
func (w *loadWriter) counts() (ok, failed int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ok, w.failed
}

// waitProgress waits until n more puts have been acknowledged.
func (w *loadWriter) waitProgress(t *testing.T, n int) {
	t.Helper()
	ok0, _ := w.counts()
	var ok, failed int
	if !harness.Poll(clusterWait, 10*time.Millisecond, func() bool {
		ok, failed = w.counts()
		return ok >= ok0+n
	}) {
		t.Fatalf("writes stalled: %d acknowledged, %d failed (%d acknowledged when waiting began)", ok, failed, ok0)
	}
}

// phase starts a measured phase; the returned function ends it, logs the
// failed puts and the longest gap without an acknowledged put during it,
// and returns the number of failed puts.
func (w *loadWriter) phase(t *testing.T, name string) func() int {
	t.Helper()
	w.mu.Lock()
	ok0, failed0 := w.ok, w.failed
	w.errs = map[string]int{}
	w.maxGap = 0
	w.lastOK = time.Now()
	w.mu.Unlock()
	start := time.Now()
	return func() int {
		t.Helper()
		w.mu.Lock()
		defer w.mu.Unlock()
		gap := max(w.maxGap, time.Since(w.lastOK))
		var errs []string
		for e, n := range w.errs {
			errs = append(errs, fmt.Sprintf("%dx %s", n, e))
		}
		sort.Strings(errs)
		failed := w.failed - failed0
		t.Logf("availability: %-28s %6.2fs, %5d puts acknowledged, %3d failed, longest gap without an ack %v; errors: [%s]",
			name, time.Since(start).Seconds(), w.ok-ok0, failed, gap.Round(time.Millisecond), strings.Join(errs, "; "))
		return failed
	}
}

// stop stops the writer and returns the acknowledged puts.
func (w *loadWriter) stop() map[string]string {
	close(w.stopc)
	w.done.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked
}

// assertAckedPresent checks that every acknowledged put is in member i's
// key space under prefix, with its value (a serializable read, after a
// linearizable one has made the member apply everything committed).
func (c *cluster) assertAckedPresent(t *testing.T, i int, prefix string, acked map[string]string) {
	t.Helper()
	rev := c.syncRead(t, i)
	resp, err := c.clients[i].Get(ctx(t), prefix, clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithSerializable())
	must(t, err)
	got := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		got[string(kv.Key)] = string(kv.Value)
	}
	var missing []string
	for k, v := range acked {
		if got[k] != v {
			missing = append(missing, fmt.Sprintf("%s=%s (have %q)", k, v, got[k]))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Fatalf("m%d (%s) lost %d of %d acknowledged writes, e.g. %v", i, c.members[i].name, len(missing), len(acked), missing[:min(5, len(missing))])
	}
}

// retryReconfig runs op until it succeeds, retrying while the cluster
// refuses it under the strict reconfiguration check (peers not yet
// connected for the health interval), bounded by clusterWait. It returns
// how long the refusals lasted.
func retryReconfig(t *testing.T, what string, op func() error) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(clusterWait)
	for {
		err := op()
		if err == nil {
			return time.Since(start)
		}
		retriable := sameErr(err, rpctypes.ErrMemberNotEnoughStarted) || sameErr(err, rpctypes.ErrUnhealthy)
		if !retriable || time.Now().After(deadline) {
			t.Fatalf("%s: %s (after %v)", what, describeErr(err), time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// addVoter adds a voting member through c.clients[via], waiting out the
// strict reconfiguration check, and returns its ID and --initial-cluster.
func (c *cluster) addVoter(t *testing.T, via int, name, peerURL string) (uint64, string) {
	t.Helper()
	var resp *clientv3.MemberAddResponse
	waited := retryReconfig(t, "member add "+name, func() error {
		r, err := c.clients[via].MemberAdd(ctx(t), []string{peerURL})
		resp = r
		return err
	})
	if waited > 200*time.Millisecond {
		t.Logf("member add %s: strict reconfig check refused it for %v", name, waited.Round(time.Millisecond))
	}
	if resp.Member.IsLearner {
		t.Fatalf("member add %s made a learner", name)
	}
	return resp.Member.ID, joinCluster(resp, name)
}

// removeMember removes member i through c.clients[via], waiting out the
// strict reconfiguration check.
func (c *cluster) removeMember(t *testing.T, via, i int) {
	t.Helper()
	waited := retryReconfig(t, "member remove "+c.members[i].name, func() error {
		_, err := c.clients[via].MemberRemove(ctx(t), c.ids[i])
		return err
	})
	if waited > 200*time.Millisecond {
		t.Logf("member remove %s: strict reconfig check refused it for %v", c.members[i].name, waited.Round(time.Millisecond))
	}
}

// waitExited waits until member i's process has exited (a removed member
// stops by itself).
func (c *cluster) waitExited(t *testing.T, i int) {
	t.Helper()
	c.members[i].waitExit(t, clusterWait, "stop once removed")
}

// prepareJoin creates (without starting) a member that was added with
// MemberAdd, appends it to the cluster and returns its index.
func (c *cluster) prepareJoin(t *testing.T, name, peerURL, initialCluster string, id uint64) int {
	t.Helper()
	dir := t.TempDir()
	m := &member{
		t:         t,
		name:      name,
		dataDir:   filepath.Join(dir, name+".etcd"),
		clientURL: harness.FreeURL(t),
		peerURL:   peerURL,
		logPath:   filepath.Join(dir, name+".log"),
	}
	m.args = harness.Flags{
		Name: m.name, DataDir: m.dataDir, ClientURL: m.clientURL, PeerURL: m.peerURL,
		InitialCluster: initialCluster, Token: c.token, State: "existing",
		Extra: []string{"--heartbeat-interval", "50", "--election-timeout", "500"},
	}.Args()
	c.members = append(c.members, m)
	c.clients = append(c.clients, m.client(t))
	c.ids = append(c.ids, id)
	return len(c.members) - 1
}

// memberCount returns the number of members c.clients[via] lists.
func (c *cluster) memberCount(t *testing.T, via int) int {
	t.Helper()
	resp, err := c.clients[via].MemberList(ctx(t))
	must(t, err)
	return len(resp.Members)
}

// Grow 1 -> 3 -> 5 and shrink 5 -> 3 -> 1 under a continuous write load
// through the original member: every acknowledged write is on every
// remaining member at the end, and the failed writes of each
// reconfiguration are reported.
func TestMembershipGrowShrinkUnderLoad(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 1})
	const prefix = "load/"
	w := startLoadWriter(c.clients[0], prefix)
	w.waitProgress(t, 20)

	grow := func(name string) int {
		t.Helper()
		end := w.phase(t, "add "+name)
		peerURL := harness.FreeURL(t)
		id, ic := c.addVoter(t, 0, name, peerURL)
		i := c.prepareJoin(t, name, peerURL, ic, id)
		c.members[i].start()
		c.waitLeader(c.all()[:i+1]...)
		w.waitProgress(t, 20)
		end()
		return i
	}
	shrink := func(i int) {
		t.Helper()
		end := w.phase(t, "remove "+c.members[i].name)
		c.removeMember(t, 0, i)
		c.waitExited(t, i)
		w.waitProgress(t, 20)
		end()
	}

	live := []int{0}
	for _, name := range []string{"m1", "m2", "m3", "m4"} {
		live = append(live, grow(name))
		if n := c.memberCount(t, 0); n != len(live) {
			t.Fatalf("member list has %d members, want %d", n, len(live))
		}
		if len(live) == 3 {
			w.waitProgress(t, 50)
		}
	}
	w.waitProgress(t, 50)
	for len(live) > 1 {
		i := live[len(live)-1]
		shrink(i)
		live = live[:len(live)-1]
		if n := c.memberCount(t, 0); n != len(live) {
			t.Fatalf("member list has %d members, want %d", n, len(live))
		}
		c.waitLeader(live...)
		if len(live) == 3 {
			w.waitProgress(t, 50)
			// Every acknowledged write so far is on the three left.
			ok, _ := w.counts()
			t.Logf("at 3 members again after %d acknowledged writes", ok)
		}
	}
	acked := w.stop()
	ok, failed := w.counts()
	t.Logf("total: %d writes acknowledged, %d failed", ok, failed)
	c.assertAckedPresent(t, 0, prefix, acked)
	c.assertConsistent(t, live...)
}

// Replace a failed member under write load: kill it, remove it, add a new
// member on a new data dir and port, start it with
// --initial-cluster-state existing. No acknowledged write is lost, and the
// new member holds them all.
func TestMembershipReplaceFailedMember(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})
	leader := c.waitLeader(c.all()...)
	const prefix = "replace/"
	w := startLoadWriter(c.clients[leader], prefix)
	w.waitProgress(t, 50)

	failedIdx := c.followerOtherThan(leader)
	end := w.phase(t, "kill "+c.members[failedIdx].name)
	c.members[failedIdx].kill()
	w.waitProgress(t, 50)
	end()

	end = w.phase(t, "remove "+c.members[failedIdx].name)
	c.removeMember(t, leader, failedIdx)
	w.waitProgress(t, 50)
	end()
	if n := c.memberCount(t, leader); n != 2 {
		t.Fatalf("member list has %d members after the remove, want 2", n)
	}

	end = w.phase(t, "add+start replacement")
	peerURL := harness.FreeURL(t)
	id, ic := c.addVoter(t, leader, "r0", peerURL)
	r := c.prepareJoin(t, "r0", peerURL, ic, id)
	c.members[r].start()
	live := c.except(failedIdx)
	c.waitLeader(live...)
	w.waitProgress(t, 50)
	end()

	acked := w.stop()
	ok, failed := w.counts()
	t.Logf("total: %d writes acknowledged, %d failed", ok, failed)
	if n := c.memberCount(t, r); n != 3 {
		t.Fatalf("replacement lists %d members, want 3", n)
	}
	c.assertAckedPresent(t, r, prefix, acked)
	c.assertConsistent(t, live...)
	// The replacement takes part in the quorum: with the old leader gone
	// the other two still commit.
	mustPut(t, c.clients[r], "via-replacement", "v")
}

// A learner refuses writes and linearizable reads but serves serializable
// ones; MemberPromote is refused while the learner is far behind the leader
// (added but not started, after many writes) and accepted once it has
// caught up.
func TestMembershipLearnerRefusalsAndPromotion(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})
	leader := c.waitLeader(c.all()...)
	n := 20000
	if testing.Short() {
		n = 2000
	}
	putMany(t, c.clients[leader], "pre/", n)

	peerURL := harness.FreeURL(t)
	id, learner, ic := c.addMember(t, leader, "l0", peerURL, true)
	if !learner {
		t.Fatal("MemberAddAsLearner made a voter")
	}
	errNotReady := rpctypes.Error(rpctypes.ErrGRPCLearnerNotReady)
	// Not started: far behind the leader, on every voter (followers ask the
	// leader).
	for _, i := range c.all() {
		_, err := c.clients[i].MemberPromote(ctx(t), id)
		wantErr(t, err, errNotReady)
	}
	// Promoting a voter is refused differently.
	_, err := c.clients[leader].MemberPromote(ctx(t), c.ids[leader])
	wantErr(t, err, rpctypes.Error(rpctypes.ErrGRPCMemberNotLearner))

	l := c.prepareJoin(t, "l0", peerURL, ic, id)
	c.members[l].start()
	lcli := c.clients[l]

	errLearner := rpctypes.Error(rpctypes.ErrGRPCNotSupportedForLearner)
	_, err = lcli.Put(ctx(t), "k", "v")
	wantErr(t, err, errLearner)
	_, err = lcli.Get(ctx(t), "pre/0000000")
	wantErr(t, err, errLearner)

	// Serializable reads are served; once caught up they see the last key.
	last := fmt.Sprintf("pre/%07d", n-1)
	rev := currentRev(t, c.clients[leader])
	waitSerializable(t, lcli, last, rev)

	// Caught up: promotion is accepted (retried only while the leader still
	// reports it behind, bounded).
	deadline := time.Now().Add(clusterWait)
	for {
		_, err := c.clients[leader].MemberPromote(ctx(t), id)
		if err == nil {
			break
		}
		if !sameErr(err, errNotReady) || time.Now().After(deadline) {
			t.Fatalf("promoting the caught-up learner: %s", describeErr(err))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if c.isLearner(t, leader, id) {
		t.Fatal("still a learner after a successful MemberPromote")
	}
	// As a voter it now serves writes and linearizable reads.
	mustPut(t, lcli, "via-promoted", "v")
	resp, err := lcli.Get(ctx(t), "via-promoted")
	must(t, err)
	if got := kvPairs(resp.Kvs); got != "via-promoted=v" {
		t.Fatalf("linearizable read on the promoted member: %s", got)
	}
	c.assertConsistent(t, c.all()...)
}

// putMany writes n keys prefix%07d concurrently; each must succeed.
func putMany(t *testing.T, cli *clientv3.Client, prefix string, n int) {
	t.Helper()
	const workers = 32
	start := time.Now()
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := g; k < n; k += workers {
				cctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
				_, err := cli.Put(cctx, fmt.Sprintf("%s%07d", prefix, k), strconv.Itoa(k))
				cancel()
				if err != nil {
					errc <- fmt.Errorf("put %s%07d: %s", prefix, k, describeErr(err))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	t.Logf("wrote %d keys in %v (%.0f puts/s)", n, d.Round(time.Millisecond), float64(n)/d.Seconds())
}

// waitSerializable waits until a serializable Get of key on cli finds it
// at revision rev exactly, and returns how many attempts it took.
func waitSerializable(t *testing.T, cli *clientv3.Client, key string, rev int64) int {
	t.Helper()
	deadline := time.Now().Add(2 * clusterWait)
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := cli.Get(cctx, key, clientv3.WithSerializable())
		cancel()
		if err == nil && len(resp.Kvs) == 1 && resp.Header.Revision == rev {
			return attempt
		}
		if err == nil && resp.Header.Revision > rev {
			t.Fatalf("serializable read of %s at revision %d, beyond the leader's %d with no writes", key, resp.Header.Revision, rev)
		}
		if time.Now().After(deadline) {
			got := "<error " + describeErr(err) + ">"
			if err == nil {
				got = fmt.Sprintf("%d kvs at revision %d", len(resp.Kvs), resp.Header.Revision)
			}
			t.Fatalf("serializable read of %s never reached revision %d within %v; last: %s", key, rev, 2*clusterWait, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// How long a new member takes to catch up with a store of 100k keys (20k
// in -short): measured and logged, not asserted beyond a give-up bound.
func TestMembershipCatchUpTime(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 20000
	}
	c := startCluster(t, clusterOpts{size: 3})
	leader := c.waitLeader(c.all()...)
	putMany(t, c.clients[leader], "catchup/", n)
	rev := currentRev(t, c.clients[leader])
	last := fmt.Sprintf("catchup/%07d", n-1)

	peerURL := harness.FreeURL(t)
	start := time.Now()
	id, ic := c.addVoter(t, leader, "new", peerURL)
	i := c.prepareJoin(t, "new", peerURL, ic, id)
	ready := c.members[i].launch()
	c.members[i].waitReady(ready)
	readyAfter := time.Since(start)
	attempts := waitSerializable(t, c.clients[i], last, rev)
	caughtUp := time.Since(start)
	t.Logf("catch-up: new member with %d keys (revision %d): ready after %v, serializable read of the last key at the leader's revision after %v (%d attempts)",
		n, rev, readyAfter.Round(time.Millisecond), caughtUp.Round(time.Millisecond), attempts)

	resp, err := c.clients[i].Get(ctx(t), "catchup/", clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithSerializable())
	must(t, err)
	if resp.Count != int64(n) {
		t.Fatalf("new member holds %d catchup/ keys, want %d", resp.Count, n)
	}
	c.assertConsistent(t, c.all()...)
}
