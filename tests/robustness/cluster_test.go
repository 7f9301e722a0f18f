package robustness

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnkv/cairn/pkg/proxy"
	"github.com/cairnkv/cairn/tests/harness"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

const (
	// recoverTimeout bounds how long the cluster may take to agree on a
	// leader again once a fault is undone.
	recoverTimeout = 30 * time.Second
)

// proc is one member process, restarted on the same data dir and ports.
type proc struct {
	name, bin string
	args      []string
	logPath   string
	// extra are flags added to args by a fault (the disk-full fault's
	// quota) until it is undone; set only while the process is down.
	extra []string

	// h runs the process, configured from the fields above at each launch.
	h harness.Process
}

// start launches the process and waits for its ready line.
func (p *proc) start() error {
	ready, err := p.launch()
	if err != nil {
		return err
	}
	return p.waitReady(ready)
}

func (p *proc) launch() (<-chan struct{}, error) {
	p.h.Name, p.h.Bin, p.h.Args, p.h.LogPath = p.name, p.bin, slices.Concat(p.args, p.extra), p.logPath
	return p.h.Launch()
}

func (p *proc) waitReady(ready <-chan struct{}) error { return p.h.WaitReady(ready) }

func (p *proc) running() bool { return p.h.Running() }

// signal sends sig to a running process.
func (p *proc) signal(sig syscall.Signal) {
	if p.running() {
		_ = p.h.Signal(sig)
	}
}

// kill SIGKILLs the process and waits until it is gone.
func (p *proc) kill() { p.h.Kill() }

// stop resumes a paused process, SIGTERMs it and kills it if it has not
// exited within harness.StopTimeout.
func (p *proc) stop() {
	if !p.running() {
		return
	}
	p.signal(syscall.SIGCONT)
	_ = p.h.Stop()
}

// cluster is a three-member cluster whose members reach each other through
// a fault-injecting proxy each: member i listens for peers on its own port
// and advertises its proxy's address.
type cluster struct {
	t       *testing.T
	dir     string
	procs   []*proc
	proxies []*proxy.Proxy
	// listen are the members' own peer addresses, behind the proxies.
	listen    []string
	endpoints []string
	admin     []*clientv3.Client // one per member, pinned to it
	ids       []uint64

	// archive keeps the revision history that compactions remove.
	archive revArchive
	// failpoints: the members serve /failpoints (a cairn built with
	// -tags failpoints).
	failpoints bool
	// cut isolates members behind their proxies.
	cut *harness.PeerCut

	mu sync.Mutex // guards ids, which a member replacement changes
}

// startCluster starts size members of bin with logs and data under dir.
func startCluster(t *testing.T, bin, dir string, size int, extraArgs ...string) *cluster {
	mountPowerDisks(t, dir, size) // first: the mounts must outlive the members
	c := &cluster{t: t, dir: dir}
	listen := make([]string, size)
	c.listen = listen
	var initial []string
	for i := range size {
		listen[i] = harness.FreeAddr(t)
		p, err := proxy.New(proxy.Config{Listen: "127.0.0.1:0", Target: listen[i]})
		if err != nil {
			t.Fatal(err)
		}
		c.proxies = append(c.proxies, p)
		initial = append(initial, fmt.Sprintf("m%d=http://%s", i, p.Addr()))
	}
	c.cut = harness.NewPeerCut(c.proxies)
	t.Cleanup(c.shutdown)
	for i := range size {
		clientURL := harness.FreeURL(t)
		c.endpoints = append(c.endpoints, clientURL)
		name := fmt.Sprintf("m%d", i)
		c.procs = append(c.procs, &proc{
			name:    name,
			bin:     bin,
			logPath: filepath.Join(dir, name+".log"),
			args: harness.Flags{
				Name:             name,
				DataDir:          memberDataDir(dir, name),
				ClientURL:        clientURL,
				PeerURL:          "http://" + listen[i],
				AdvertisePeerURL: "http://" + c.proxies[i].Addr(),
				InitialCluster:   strings.Join(initial, ","),
				Token:            "robustness",
				State:            "new",
				Extra: append([]string{
					"--heartbeat-interval", "50",
					"--election-timeout", "500",
					// Snapshot often and keep few entries after one, so
					// that members that were down or cut off catch up
					// through a snapshot.
					"--snapshot-count", "200",
					"--snapshot-catchup-entries", "100",
					// Compactions delete in several rounds (and
					// pass the failpoint between two).
					"--compaction-batch-limit", "100",
				}, extraArgs...),
			}.Args(),
		})
	}
	if err := c.startAll(); err != nil {
		t.Fatal(err)
	}
	for _, ep := range c.endpoints {
		cli, err := newClient([]string{ep})
		if err != nil {
			t.Fatal(err)
		}
		c.admin = append(c.admin, cli)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ml, err := c.admin[0].MemberList(ctx)
	if err != nil {
		t.Fatalf("member list: %v", err)
	}
	c.ids = make([]uint64, size)
	for _, m := range ml.Members {
		var i int
		if _, err := fmt.Sscanf(m.Name, "m%d", &i); err != nil || i < 0 || i >= size {
			t.Fatalf("unexpected member %q", m.Name)
		}
		c.setID(i, m.ID)
	}
	if _, err := c.waitLeader(recoverTimeout); err != nil {
		t.Fatal(err)
	}
	c.failpoints = servesFailpoints(c.endpoints[0])
	return c
}

// startAll launches every member, then waits until each is ready.
func (c *cluster) startAll() error {
	ready := make([]<-chan struct{}, len(c.procs))
	for i, p := range c.procs {
		r, err := p.launch()
		if err != nil {
			return err
		}
		ready[i] = r
	}
	for i, p := range c.procs {
		if err := p.waitReady(ready[i]); err != nil {
			return err
		}
	}
	return nil
}

// servesFailpoints reports whether the member at ep lists its failpoints
// (gofail's HTTP interface on the client URL).
func servesFailpoints(ep string) bool {
	resp, err := http.Get(ep + "/failpoints")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func newClient(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(),
	})
}

// shutdown undoes every fault and stops all members.
func (c *cluster) shutdown() {
	for i := range c.proxies {
		c.heal(i)
		c.proxies[i].UndelayTx()
		c.proxies[i].UndelayRx()
	}
	for _, cli := range c.admin {
		cli.Close()
	}
	var wg sync.WaitGroup
	for _, p := range c.procs {
		wg.Go(p.stop)
	}
	wg.Wait()
	for _, p := range c.proxies {
		p.Close()
	}
}

// leaderOf asks member i who leads; 0 if it cannot say.
func (c *cluster) leaderOf(i int) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := c.admin[i].Status(ctx, c.endpoints[i])
	if err != nil {
		return 0
	}
	return s.Leader
}

// leader returns the index of the member that a running member reports as
// leader, or -1.
func (c *cluster) leader() int {
	for i := range c.procs {
		if !c.procs[i].running() {
			continue
		}
		if id := c.leaderOf(i); id != 0 {
			for j, x := range c.ids {
				if x == id {
					return j
				}
			}
		}
	}
	return -1
}

// waitLeader waits until every member names the same leader.
func (c *cluster) waitLeader(d time.Duration) (int, error) {
	deadline := time.Now().Add(d)
	for {
		var ids []uint64
		for i := range c.procs {
			ids = append(ids, c.leaderOf(i))
		}
		same := ids[0] != 0
		for _, id := range ids {
			same = same && id == ids[0]
		}
		if same {
			for j, x := range c.ids {
				if x == ids[0] {
					return j, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("members did not agree on a leader within %v: %x", d, ids)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// setID records member i's ID, which a member replacement changes; the
// proxies' sender filters read it concurrently.
func (c *cluster) setID(i int, id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids[i] = id
	c.cut.SetID(i, id)
}

// isolate cuts member i off from its peers (clients still reach it).
func (c *cluster) isolate(i int) { c.cut.Isolate(i) }

// heal undoes isolate(i).
func (c *cluster) heal(i int) { c.cut.Heal(i) }

// syncRevision makes member i serve a linearizable read and returns the
// revision it read at.
func (c *cluster) syncRevision(i int) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.admin[i].Get(ctx, "sync-probe")
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// settle waits until every member serves linearizable reads at one and
// the same revision twice in a row, i.e. nothing is left to apply.
func (c *cluster) settle(d time.Duration) (int64, error) {
	deadline := time.Now().Add(d)
	var last []int64
	var lastErr error
	stable := 0
	for time.Now().Before(deadline) {
		var revs []int64
		lastErr = nil
		for i := range c.procs {
			r, err := c.syncRevision(i)
			if err != nil {
				lastErr = fmt.Errorf("m%d: %w", i, err)
				break
			}
			revs = append(revs, r)
		}
		if lastErr == nil && len(revs) == len(c.procs) && revs[0] == revs[len(revs)-1] && revs[0] == revs[1] {
			if slices.Equal(revs, last) {
				stable++
				if stable >= 2 {
					return revs[0], nil
				}
			} else {
				stable = 0
			}
		}
		last = revs
		time.Sleep(200 * time.Millisecond)
	}
	return 0, fmt.Errorf("cluster did not settle within %v: last revisions %v, last error %v", d, last, lastErr)
}

// hashKVs returns every member's HashKV at rev.
func (c *cluster) hashKVs(rev int64) ([]*clientv3.HashKVResponse, error) {
	var out []*clientv3.HashKVResponse
	for i := range c.procs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		h, err := c.admin[i].HashKV(ctx, c.endpoints[i], rev)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("HashKV on m%d: %w", i, err)
		}
		out = append(out, h)
	}
	return out, nil
}
