package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnkv/cairn/pkg/proxy"
	"github.com/cairnkv/cairn/tests/harness"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// referenceEnv, when set to "etcd", runs every member of the cluster tests
// on the real etcd v3.7.3 binary instead of cairn. The cluster tests assert
// etcd's behaviour; running them against etcd itself checks the tests.
const referenceEnv = "CAIRN_E2E_REFERENCE"

const (
	// clusterWait bounds waiting for a cluster-wide condition (a leader
	// everyone agrees on, a member catching up).
	clusterWait = 30 * time.Second
	// failTimeout bounds a request that is expected to fail because the
	// member serving it cannot reach a quorum.
	failTimeout = 3 * time.Second
)

// clusterOpts configures startCluster.
type clusterOpts struct {
	size int // number of members (3 or 5)
	// proxies routes each member's inbound peer traffic through a
	// pkg/proxy: the member advertises the proxy's address and listens on
	// its own, so that isolate can cut it off.
	proxies bool
	// electionMs is --election-timeout (default 500); the heartbeat is 50.
	electionMs int
	// token is --initial-cluster-token (default derived from the test).
	token string
	// args are extra flags for every member.
	args []string
	// bins maps a member index to the executable it runs (default cairn).
	bins map[int]string
	// peerScheme is the scheme of the peer URLs (default http); https
	// and unixs need the peer TLS flags in args. unix and unixs URLs name
	// socket files relative to the working directory, so the members then
	// share one (the cluster's temp dir).
	peerScheme string
}

// cluster is a set of members bootstrapped together.
type cluster struct {
	t       *testing.T
	token   string
	members []*member
	proxies []*proxy.Proxy // nil without proxies
	clients []*clientv3.Client
	ids     []uint64 // member IDs by index, from MemberList
	// initialCluster is the shared --initial-cluster value.
	initialCluster string
	// cut isolates members behind their proxies (nil without proxies).
	cut *harness.PeerCut
}

// etcdBinary returns the real etcd v3.7.3 binary, skipping the test if it
// cannot be built; in -short mode it is not built, only used if cached.
func etcdBinary(t testing.TB) string {
	t.Helper()
	return harness.Etcd(t, "etcd")
}

// cairnAndEtcd maps the binaries a test that compares with etcd runs on, by
// name, to the member's bin: "" for cairn and, outside -short mode (where
// etcd is not built), etcd v3.7.3.
func cairnAndEtcd(t testing.TB) map[string]string {
	t.Helper()
	bins := map[string]string{"cairn": ""}
	if !testing.Short() {
		bins["etcd"] = etcdBinary(t)
	}
	return bins
}

// startCluster starts o.size members with a shared --initial-cluster, waits
// until every one is ready and all agree on one leader, and stops them all
// (concurrently, SIGTERM then SIGKILL) when the test ends.
func startCluster(t *testing.T, o clusterOpts) *cluster {
	t.Helper()
	if o.size == 0 {
		o.size = 3
	}
	if o.electionMs == 0 {
		o.electionMs = 500
	}
	if o.token == "" {
		o.token = "e2e-" + strings.ReplaceAll(t.Name(), "/", "-")
	}
	if o.peerScheme == "" {
		o.peerScheme = "http"
	}
	ref := os.Getenv(referenceEnv) == "etcd"
	c := &cluster{t: t, token: o.token}
	dir := t.TempDir()

	advertised := make([]string, o.size)
	listen := make([]string, o.size)
	var ic []string
	for i := range o.size {
		listen[i] = harness.FreeAddr(t)
		advertised[i] = listen[i]
		if o.proxies {
			p, err := proxy.New(proxy.Config{Listen: harness.FreeAddr(t), Target: listen[i]})
			if err != nil {
				t.Fatalf("proxy for member %d: %v", i, err)
			}
			t.Cleanup(func() { p.Close() })
			c.proxies = append(c.proxies, p)
			advertised[i] = p.Addr()
		}
		ic = append(ic, fmt.Sprintf("m%d=%s://%s", i, o.peerScheme, advertised[i]))
	}
	c.initialCluster = strings.Join(ic, ",")
	if o.proxies {
		c.cut = harness.NewPeerCut(c.proxies)
	}

	for i := range o.size {
		m := &member{
			t:         t,
			name:      fmt.Sprintf("m%d", i),
			dataDir:   filepath.Join(dir, fmt.Sprintf("m%d.etcd", i)),
			clientURL: harness.FreeURL(t),
			peerURL:   o.peerScheme + "://" + listen[i],
			logPath:   filepath.Join(dir, fmt.Sprintf("m%d.log", i)),
			bin:       o.bins[i],
		}
		if strings.HasPrefix(o.peerScheme, "unix") {
			m.cwd = dir
		}
		if ref && m.bin == "" {
			m.bin = etcdBinary(t)
		}
		m.args = harness.Flags{
			Name:             m.name,
			DataDir:          m.dataDir,
			ClientURL:        m.clientURL,
			PeerURL:          m.peerURL,
			AdvertisePeerURL: o.peerScheme + "://" + advertised[i],
			InitialCluster:   c.initialCluster,
			Token:            o.token,
			State:            "new",
			Extra: append([]string{
				"--heartbeat-interval", "50",
				"--election-timeout", strconv.Itoa(o.electionMs),
			}, o.args...),
		}.Args()
		c.members = append(c.members, m)
	}
	t.Cleanup(c.stopAll)

	ready := make([]<-chan struct{}, o.size)
	for i, m := range c.members {
		ready[i] = m.launch()
	}
	for i, m := range c.members {
		m.waitReady(ready[i])
	}
	for _, m := range c.members {
		c.clients = append(c.clients, m.client(t))
	}

	resp, err := c.clients[0].MemberList(ctx(t))
	must(t, err)
	c.ids = make([]uint64, o.size)
	for _, mm := range resp.Members {
		var i int
		if _, err := fmt.Sscanf(mm.Name, "m%d", &i); err != nil || i < 0 || i >= o.size {
			t.Fatalf("unexpected member %q (%x) in member list", mm.Name, mm.ID)
		}
		c.ids[i] = mm.ID
	}
	for i, id := range c.ids {
		if id == 0 {
			t.Fatalf("member m%d missing from member list %v", i, resp.Members)
		}
		if c.cut != nil {
			c.cut.SetID(i, id)
		}
	}
	c.waitLeader(c.all()...)
	return c
}

// stopAll stops every running member and dumps the logs if the test
// failed. Followers stop first, concurrently, then the leaders: a leader
// that stops hands its leadership over, and one whose transferee is
// stopping at the same time waits out a request timeout for a hand-over
// that cannot finish.
func (c *cluster) stopAll() {
	var leaders, others []*member
	for i, m := range c.members {
		if !m.running() {
			continue
		}
		if i < len(c.clients) {
			if s, err := c.status(i, 500*time.Millisecond); err == nil && s.Leader == s.Header.MemberId {
				leaders = append(leaders, m)
				continue
			}
		}
		others = append(others, m)
	}
	for _, ms := range [][]*member{others, leaders} {
		var wg sync.WaitGroup
		for _, m := range ms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := gracefulExit(m.stop()); err != nil {
					c.t.Errorf("stopping member %s: %v", m.name, err)
				}
			}()
		}
		wg.Wait()
	}
	if c.t.Failed() {
		for _, m := range c.members {
			m.dumpLog()
		}
	}
}

// all returns the indexes of every member.
func (c *cluster) all() []int {
	idx := make([]int, len(c.members))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// except returns the indexes of every member not in skip.
func (c *cluster) except(skip ...int) []int {
	var idx []int
	for i := range c.members {
		if !containsInt(skip, i) {
			idx = append(idx, i)
		}
	}
	return idx
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// index returns the member index of id, or -1.
func (c *cluster) index(id uint64) int {
	for i, x := range c.ids {
		if x == id {
			return i
		}
	}
	return -1
}

// status asks member i for its status, bounded by d.
func (c *cluster) status(i int, d time.Duration) (*clientv3.StatusResponse, error) {
	cctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.clients[i].Status(cctx, c.members[i].clientURL)
}

// leaders returns the leader each of the members idx reports (0 when it
// knows none or cannot answer).
func (c *cluster) leaders(idx []int, d time.Duration) []uint64 {
	out := make([]uint64, len(idx))
	for k, i := range idx {
		if s, err := c.status(i, d); err == nil {
			out[k] = s.Leader
		}
	}
	return out
}

// waitLeader waits until every member in idx answers Status naming the
// same leader, which is one of them, and returns that leader's index.
func (c *cluster) waitLeader(idx ...int) int {
	c.t.Helper()
	deadline := time.Now().Add(clusterWait)
	var last []uint64
	for {
		last = c.leaders(idx, 2*time.Second)
		if l := c.index(last[0]); last[0] != 0 && containsInt(idx, l) && allEqual(last) {
			return l
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("members %v did not agree on a leader among them within %v; last reported leaders %x (ids %x)",
				idx, clusterWait, last, c.ids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func allEqual[T comparable](s []T) bool {
	for _, v := range s {
		if v != s[0] {
			return false
		}
	}
	return true
}

// isolate cuts member i off from every other member (see
// harness.PeerCut).
func (c *cluster) isolate(i int) {
	c.t.Helper()
	if c.cut == nil {
		c.t.Fatal("isolate needs a cluster started with proxies")
	}
	c.cut.Isolate(i)
}

// heal undoes isolate(i).
func (c *cluster) heal(i int) { c.cut.Heal(i) }

// syncRead makes member i serve a linearizable read and returns its
// revision; afterwards the member has applied everything committed before.
func (c *cluster) syncRead(t testing.TB, i int) int64 {
	t.Helper()
	resp, err := c.clients[i].Get(ctx(t), "\x00-sync-probe")
	if err != nil {
		t.Fatalf("linearizable read on m%d: %s", i, describeErr(err))
	}
	return resp.Header.Revision
}

// waitValue waits until a linearizable read of key on member i returns
// want.
func (c *cluster) waitValue(t testing.TB, i int, key, want string) {
	t.Helper()
	deadline := time.Now().Add(clusterWait)
	for {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := c.clients[i].Get(cctx, key)
		cancel()
		if err == nil && len(resp.Kvs) == 1 && string(resp.Kvs[0].Value) == want {
			return
		}
		if time.Now().After(deadline) {
			got := "<error " + describeErr(err) + ">"
			if err == nil {
				got = kvPairs(resp.Kvs)
			}
			t.Fatalf("m%d: %q never read as %q within %v; last: %s", i, key, want, clusterWait, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// assertConsistent checks that members idx hold identical data: with no
// writes in flight, each serves a linearizable read at the same revision,
// the full key space at that revision is equal, and HashKV at that
// revision agrees.
func (c *cluster) assertConsistent(t testing.TB, idx ...int) {
	t.Helper()
	rev := c.syncRead(t, idx[0])
	for _, i := range idx[1:] {
		if r := c.syncRead(t, i); r != rev {
			t.Fatalf("revision on m%d is %d, on m%d %d", i, r, idx[0], rev)
		}
	}
	var firstKVs string
	var firstHash *clientv3.HashKVResponse
	for k, i := range idx {
		resp, err := c.clients[i].Get(ctx(t), "", clientv3.WithFromKey(), clientv3.WithRev(rev), clientv3.WithSerializable())
		must(t, err)
		var b strings.Builder
		for _, kv := range resp.Kvs {
			fmt.Fprintf(&b, "%s=%s@%d/%d/%d;", kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision, kv.Version)
		}
		h, err := c.clients[i].HashKV(ctx(t), c.members[i].clientURL, rev)
		must(t, err)
		if k == 0 {
			firstKVs, firstHash = b.String(), h
			continue
		}
		if b.String() != firstKVs {
			t.Fatalf("key space at revision %d differs between m%d and m%d:\n%s\n%s", rev, idx[0], i, firstKVs, b.String())
		}
		if h.Hash != firstHash.Hash || h.CompactRevision != firstHash.CompactRevision || h.HashRevision != firstHash.HashRevision {
			t.Fatalf("HashKV at revision %d: m%d hash=%d compact=%d hashRev=%d, m%d hash=%d compact=%d hashRev=%d",
				rev, idx[0], firstHash.Hash, firstHash.CompactRevision, firstHash.HashRevision, i, h.Hash, h.CompactRevision, h.HashRevision)
		}
	}
}

// logSince returns member m's log output written by its most recent start.
func logSince(t testing.TB, m *member) string {
	t.Helper()
	s, err := m.proc.LogSince()
	if err != nil {
		t.Fatalf("reading log of %s: %v", m.name, err)
	}
	return s
}

// sigterm stops member i gracefully and returns how long it took to exit.
func (c *cluster) sigterm(i int) (time.Duration, error) {
	start := time.Now()
	err := gracefulExit(c.members[i].signal(syscall.SIGTERM, stopTimeout))
	return time.Since(start), err
}

// gracefulExit maps the exit of a process stopped by SIGTERM to nil when it
// was clean: exit status 0, or death by the SIGTERM itself, which is how
// etcd ends once its shutdown is done (it re-raises the signal).
func gracefulExit(err error) error { return harness.GracefulExit(err) }
