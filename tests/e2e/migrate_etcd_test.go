package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/tests/harness"
)

// TestMigrateFromEtcd runs docs/migrating-from-etcd.md: the members of a
// running etcd v3.7.3 cluster are replaced one by one by cairn members,
// then back to etcd, each swap by the guide's own command lines (read from
// the guide, with the test's addresses, names, paths and member IDs in
// place of the example's), while an application writes through etcd's
// own client. Every write must succeed and every acknowledged write must
// be in the cluster at the end; the longest pause between two acknowledged
// writes during each swap is logged. In -short mode one member is swapped
// each way.
func TestMigrateFromEtcd(t *testing.T) {
	guide := readMigrationGuide(t)
	etcd := etcdBinary(t)
	ctl := harness.Binary(t, "cairnctl")
	c := startCluster(t, clusterOpts{size: 3, bins: map[int]string{0: etcd, 1: etcd, 2: etcd}})
	swaps := 3
	if testing.Short() {
		swaps = 1
	}
	mg := &migration{c: c, guide: guide, ctl: ctl, removed: map[int]bool{}}
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
	acked, failed := load.stop()
	t.Logf("%d writes acknowledged, %d failed", len(acked), failed)
	if failed != 0 {
		t.Errorf("%d writes failed during the migration (goal: 0)", failed)
	}
	live := mg.live()
	c.waitLeader(live...)
	c.assertConsistent(t, live...)
	checkWritesPresent(t, c.clients[live[0]], acked, failed)
}

// checkWritesPresent fails unless every acknowledged write of the load is
// in the cluster, and nothing but them and the writes whose outcome the
// writer did not learn (the failed ones, and the one cut off when the load
// stopped).
func checkWritesPresent(t *testing.T, cli *clientv3.Client, acked []string, failed int) {
	t.Helper()
	resp, err := cli.Get(ctx(t), "load/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	must(t, err)
	held := map[string]bool{}
	for _, kv := range resp.Kvs {
		held[string(kv.Key)] = true
	}
	missing := 0
	for _, k := range acked {
		if !held[k] {
			missing++
			if missing <= 10 {
				t.Errorf("acknowledged write %s is not in the cluster", k)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged writes are missing", missing, len(acked))
	}
	if extra := len(held) - (len(acked) - missing); extra > failed+1 {
		t.Errorf("the cluster holds %d writes nobody saw acknowledged; at most %d were in doubt", extra, failed+1)
	}
}

// migration is the cluster being migrated: members are appended as they
// join and marked removed as they leave.
type migration struct {
	c       *cluster
	guide   migrationGuide
	ctl     string // the guide's cairnctl
	removed map[int]bool
}

// replace swaps member old for a new one running bin, by the guide's
// commands: member add --learner, start the new member with what member
// add printed, promote it once it has caught up, point the clients (and
// the leadership, if old leads) away from old, member remove; then old is
// stopped, as the guide says to stop its service.
func (mg *migration) replace(t *testing.T, old int, bin, dataDir string, load *steadyWrites) *member {
	t.Helper()
	c := mg.c
	m := &member{t: t, name: filepath.Base(dataDir), dataDir: dataDir, bin: bin,
		clientURL: harness.FreeURL(t), peerURL: harness.FreeURL(t),
		logPath: dataDir + ".log"}
	sub := mg.substitution(old, m)
	env := sub.endpointsEnv(t, mg.guide.endpoints)

	// 1. member add --learner, retried while etcd finds the cluster
	// unhealthy (a voter connected for less than 5 s).
	out := mg.runUntil(t, env, sub.command(t, mg.guide.add), errUnhealthy)
	id, initial := parseMemberAdd(t, out)
	sub.words[guideNewID] = id

	// 2. Start the new member with what member add printed.
	args := sub.command(t, mg.guide.start)
	setFlag(t, args, "--initial-cluster", initial)
	setFlag(t, args, "--data-dir", m.dataDir)
	m.args = args[1:]
	c.members = append(c.members, m) // from here on its log is dumped on failure
	m.start()

	// 3. Promote once it has caught up.
	mg.runUntil(t, env, sub.command(t, mg.guide.promote), errNotInSync)
	c.clients = append(c.clients, m.client(t))
	var newID uint64
	if _, err := fmt.Sscanf(id, "%x", &newID); err != nil {
		t.Fatalf("member ID %q: %v", id, err)
	}
	c.ids = append(c.ids, newID)

	// 4. Clients away from old, then the leadership if old leads.
	var eps []string
	for _, i := range mg.live() {
		if i != old {
			eps = append(eps, c.members[i].clientURL)
		}
	}
	load.setEndpoints(eps)
	env = sub.endpointsEnv(t, mg.guide.newEPs)
	if mg.leads(t, old) {
		r := mg.run(t, env, sub.command(t, mg.guide.moveLeader))
		if r.Exit != 0 && mg.leads(t, old) {
			t.Fatalf("move-leader: exit %d\n%s%s", r.Exit, r.Stdout, r.Stderr)
		}
	}

	// 5. Remove old; it stops by itself (an etcd member may already have
	// exited), and its service is stopped.
	mg.runUntil(t, env, sub.command(t, mg.guide.remove), errUnhealthy)
	_ = c.members[old].stop()
	mg.removed[old] = true
	return m
}

// The refusals the guide says to retry.
const (
	errUnhealthy = "etcdserver: unhealthy cluster"
	errNotInSync = "can only promote a learner member which is in sync with leader"
)

// run runs one of the guide's cairnctl commands ("cairnctl" is words[0]).
func (mg *migration) run(t *testing.T, env, words []string) harness.ToolRun {
	t.Helper()
	r, err := harness.Tool{Env: env, Timeout: requestTimeout}.Run(mg.ctl, words[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("$ %s\n%s%s(exit %d)", strings.Join(words, " "), r.Stdout, r.Stderr, r.Exit)
	return r
}

// runUntil runs a guide command until it succeeds, retrying while it is
// refused with one of the retryable errors, for at most clusterWait. It
// returns what the command printed.
func (mg *migration) runUntil(t *testing.T, env, words []string, retryable ...string) string {
	t.Helper()
	deadline := time.Now().Add(clusterWait)
	for {
		r := mg.run(t, env, words)
		if r.Exit == 0 {
			return r.Stdout
		}
		again := false
		for _, e := range retryable {
			again = again || strings.Contains(r.Stderr, e)
		}
		if !again || time.Now().After(deadline) {
			t.Fatalf("%s: exit %d\n%s%s", strings.Join(words, " "), r.Exit, r.Stdout, r.Stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// leads reports whether member i is the leader, by its own account.
func (mg *migration) leads(t *testing.T, i int) bool {
	t.Helper()
	st, err := mg.c.status(i, requestTimeout)
	return err == nil && st.Leader == mg.c.ids[i]
}

// parseMemberAdd returns the new member's ID and the
// ETCD_INITIAL_CLUSTER value from what member add printed.
func parseMemberAdd(t *testing.T, out string) (id, initialCluster string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "Member" && f[2] == "added" {
			id = f[1]
		}
		if v, ok := strings.CutPrefix(line, "ETCD_INITIAL_CLUSTER="); ok {
			initialCluster = strings.Trim(v, `"`)
		}
	}
	if id == "" || initialCluster == "" {
		t.Fatalf("member add printed no member ID or ETCD_INITIAL_CLUSTER:\n%s", out)
	}
	return id, initialCluster
}

// setFlag sets the value of flag, which must be in args.
func setFlag(t *testing.T, args []string, flag, value string) {
	t.Helper()
	for i := range args[:len(args)-1] {
		if args[i] == flag {
			args[i+1] = value
			return
		}
	}
	t.Fatalf("%s not in %q", flag, args)
}

// checkPeerURLs fails unless every live member lists every member with
// its peer URL, as etcd does. (A cairn member promoted by an etcd leader
// once listed itself without peer URLs, and the next cairn member then
// refused to join: etcd's promotion carries only the member's ID.)
func (mg *migration) checkPeerURLs(t *testing.T) {
	t.Helper()
	for _, i := range mg.live() {
		resp, err := mg.c.clients[i].MemberList(ctx(t))
		must(t, err)
		for _, mm := range resp.Members {
			if len(mm.PeerURLs) == 0 {
				t.Errorf("%s (%s) lists member %q without peer URLs", mg.c.members[i].name, mg.c.members[i].binary(), mm.Name)
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

// steadyWrites is an application writing sequential keys through etcd's
// client as fast as one writer can, recording which writes were
// acknowledged (and when) and how many failed.
type steadyWrites struct {
	cli    *clientv3.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	acked   []string // keys, in order
	ackedAt []time.Time
	failed  int
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
		key := fmt.Sprintf("load/%07d", i)
		reqCtx, cancel := context.WithTimeout(runCtx, 5*time.Second)
		_, err := l.cli.Put(reqCtx, key, "v")
		cancel()
		l.mu.Lock()
		switch {
		case err == nil:
			l.acked = append(l.acked, key)
			l.ackedAt = append(l.ackedAt, time.Now())
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
	for _, at := range l.ackedAt {
		if at.Before(from) || at.After(to) {
			continue
		}
		longest = max(longest, at.Sub(prev))
		prev = at
	}
	return max(longest, to.Sub(prev))
}

// stop ends the load and returns the keys of the acknowledged writes and
// how many writes failed.
func (l *steadyWrites) stop() (acked []string, failed int) {
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked, l.failed
}
