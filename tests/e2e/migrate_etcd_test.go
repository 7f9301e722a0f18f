package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/tests/harness"
)

// TestMigrateFromEtcd follows docs/migrating-from-etcd.md: the members of
// a running etcd v3.7.3 cluster are replaced one by one by cairn members
// (add as learner, wait until promotable, promote, move clients and
// leadership off the old member, remove it), then back to etcd, under a
// steady write load through etcd's own client. Every write must succeed;
// the longest pause between two acknowledged writes during each swap is
// logged. In -short mode one member is swapped each way.
func TestMigrateFromEtcd(t *testing.T) {
	etcd := etcdBinary(t)
	c := startCluster(t, clusterOpts{size: 3, bins: map[int]string{0: etcd, 1: etcd, 2: etcd}})
	swaps := 3
	if testing.Short() {
		swaps = 1
	}
	mg := &migration{c: c, removed: map[int]bool{}}
	load := startSteadyWrites(t, c.members)
	dir := t.TempDir()
	for round, bin := range []string{cairnBin, etcd} {
		kind := map[int]string{0: "cairn", 1: "etcd"}[round]
		for s := range swaps {
			old := round*swaps + s // members are appended as they join
			if round == 1 {
				old = 3 + s
			}
			began := time.Now()
			fresh := mg.replace(t, old, bin, filepath.Join(dir, fmt.Sprintf("%s%d", kind, s)), load)
			gap := load.longestGap(began, time.Now())
			mg.checkPeerURLs(t)
			t.Logf("swap %s -> %s (%s): longest write gap %v, failed writes so far %d", c.members[old].name, fresh.name, kind, gap.Round(time.Millisecond), load.failures())
		}
	}
	n, failed := load.stop()
	t.Logf("%d writes, %d failed", n, failed)
	if failed != 0 {
		t.Errorf("%d of %d writes failed during the migration (goal: 0)", failed, n)
	}
	live := mg.live()
	c.waitLeader(live...)
	c.assertConsistent(t, live...)
	resp, err := c.clients[live[0]].Get(ctx(t), "load/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	must(t, err)
	// The write in flight when the load stopped was cancelled: the cluster
	// may or may not have applied it.
	if resp.Count != int64(n) && resp.Count != int64(n+1) {
		t.Errorf("cluster holds %d writes; %d were acknowledged (and at most one more was cut off by the end of the load)", resp.Count, n)
	}
}

// replaceMember swaps member old for a new one running bin, the guide's
// procedure: member add --learner, start it with
// --initial-cluster-state=existing, promote once it has caught up, move
// the clients (and leadership, if old leads) off old, member remove, stop.
func (mg *migration) replace(t *testing.T, old int, bin, dataDir string, load *steadyWrites) *member {
	t.Helper()
	c := mg.c
	live := mg.live()
	admin := c.clients[live[0]]
	if live[0] == old {
		admin = c.clients[live[1]]
	}
	m := &member{t: t, name: filepath.Base(dataDir), dataDir: dataDir, bin: bin,
		clientURL: harness.FreeURL(t), peerURL: harness.FreeURL(t),
		logPath: dataDir + ".log"}
	// etcd refuses membership changes ("unhealthy cluster") until every
	// voter has been connected for 5 s; the guide says to retry.
	var added *clientv3.MemberAddResponse
	retryWhileUnhealthy(t, "member add --learner", func() (err error) {
		added, err = admin.MemberAddAsLearner(ctx(t), []string{m.peerURL})
		return err
	})
	// The new member's --initial-cluster: what member add printed, the
	// members' names and peer URLs (taken from the harness, which started
	// them; checkPeerURLs checks what the members report).
	initial := ""
	for _, mm := range added.Members {
		if mm.ID == added.Member.ID {
			initial += fmt.Sprintf(",%s=%s", m.name, m.peerURL)
			continue
		}
		initial += fmt.Sprintf(",%s=%s", mm.Name, mg.peerURLOf(mm.Name))
	}
	m.args = []string{"--name", m.name, "--data-dir", m.dataDir,
		"--listen-client-urls", m.clientURL, "--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", m.peerURL, "--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", initial[1:], "--initial-cluster-state", "existing",
		"--heartbeat-interval", "50", "--election-timeout", "500"}
	c.members = append(c.members, m) // from here on its log is dumped on failure
	m.start()
	deadline := time.Now().Add(clusterWait)
	for {
		_, err := admin.MemberPromote(ctx(t), added.Member.ID)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("promote %s: %v", m.name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.clients = append(c.clients, m.client(t))
	c.ids = append(c.ids, added.Member.ID)
	// Clients first: nothing may be in flight to the member when it goes.
	var eps []string
	for _, i := range mg.live() {
		if i != old {
			eps = append(eps, c.members[i].clientURL)
		}
	}
	load.setEndpoints(eps)
	if st, err := c.clients[old].Status(ctx(t), c.members[old].clientURL); err == nil && st.Leader == c.ids[old] {
		_, err := c.clients[old].MoveLeader(ctx(t), added.Member.ID)
		must(t, err)
	}
	retryWhileUnhealthy(t, "member remove", func() error {
		_, err := admin.MemberRemove(ctx(t), c.ids[old])
		return err
	})
	_ = c.members[old].stop() // a removed etcd member may already have exited
	mg.removed[old] = true
	return m
}

// retryWhileUnhealthy calls f until it does not fail with etcd's
// "unhealthy cluster", for at most clusterWait.
func retryWhileUnhealthy(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(clusterWait)
	for {
		err := f()
		if err == nil {
			return
		}
		if !errors.Is(err, rpctypes.ErrUnhealthy) || time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// migration is the cluster being migrated: members are appended as they
// join and marked removed as they leave.
type migration struct {
	c       *cluster
	removed map[int]bool
}

func (mg *migration) peerURLOf(name string) string {
	for _, m := range mg.c.members {
		if m.name == name {
			return m.peerURL
		}
	}
	mg.c.t.Fatalf("no member %q", name)
	return ""
}

// checkPeerURLs fails unless every live member lists every member with
// its peer URL, as etcd does. (A cairn member promoted by an etcd leader
// once listed itself without peer URLs, and the next cairn member then
// refused to join: etcd's promotion carries only the member's ID.)
func (mg *migration) checkPeerURLs(t *testing.T) {
	t.Helper()
	report := t.Errorf
	for _, i := range mg.live() {
		resp, err := mg.c.clients[i].MemberList(ctx(t))
		must(t, err)
		for _, mm := range resp.Members {
			if len(mm.PeerURLs) == 0 {
				report("%s (%s) lists member %q without peer URLs", mg.c.members[i].name, mg.c.members[i].binary(), mm.Name)
			}
		}
	}
}

func (mg *migration) live() []int {
	var out []int
	for i := range mg.c.members {
		if !mg.removed[i] {
			out = append(out, i)
		}
	}
	return out
}

// steadyWrites puts sequential keys through etcd's client as fast as one
// writer can, recording when each write was acknowledged and which failed.
type steadyWrites struct {
	cli    *clientv3.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	acked  []time.Time
	failed int
}

func startSteadyWrites(t *testing.T, ms []*member) *steadyWrites {
	t.Helper()
	var eps []string
	for _, m := range ms {
		eps = append(eps, m.clientURL)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	must(t, err)
	t.Cleanup(func() { cli.Close() })
	runCtx, cancel := context.WithCancel(context.Background())
	l := &steadyWrites{cli: cli, cancel: cancel, done: make(chan struct{})}
	go l.run(runCtx)
	t.Cleanup(func() { l.stop() })
	return l
}

func (l *steadyWrites) run(runCtx context.Context) {
	defer close(l.done)
	for i := 0; runCtx.Err() == nil; i++ {
		reqCtx, cancel := context.WithTimeout(runCtx, 5*time.Second)
		_, err := l.cli.Put(reqCtx, fmt.Sprintf("load/%07d", i), "v")
		cancel()
		l.mu.Lock()
		switch {
		case err == nil:
			l.acked = append(l.acked, time.Now())
		case runCtx.Err() == nil:
			l.failed++
		}
		l.mu.Unlock()
		// Bounded rate: enough writes to see a gap, little CPU.
		time.Sleep(5 * time.Millisecond)
	}
}

func (l *steadyWrites) setEndpoints(eps []string) { l.cli.SetEndpoints(eps...) }

func (l *steadyWrites) failures() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// longestGap is the longest time between two acknowledged writes (or the
// window's edges) within [from, to].
func (l *steadyWrites) longestGap(from, to time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev, longest := from, time.Duration(0)
	for _, at := range l.acked {
		if at.Before(from) || at.After(to) {
			continue
		}
		longest = max(longest, at.Sub(prev))
		prev = at
	}
	return max(longest, to.Sub(prev))
}

// stop ends the load and returns how many writes were acknowledged and
// how many failed.
func (l *steadyWrites) stop() (acked, failed int) {
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked), l.failed
}
