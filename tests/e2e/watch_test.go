package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// watchWait bounds waiting for one watch response.
const watchWait = 10 * time.Second

// watchQuiet is how long a test waits to be sure nothing arrives.
const watchQuiet = 300 * time.Millisecond

// watchCtx is a context for a watch that ends with the test.
func watchCtx(t testing.TB) context.Context {
	c, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return c
}

// renderEvents renders events as "PUT a=1@2" / "DELETE a@3", with
// " prev=v" when the event carries the previous value.
func renderEvents(evs []*clientv3.Event) string {
	parts := make([]string, len(evs))
	for i, ev := range evs {
		s := fmt.Sprintf("%s %s", ev.Type, ev.Kv.Key)
		if ev.Type == mvccpb.PUT {
			s += "=" + string(ev.Kv.Value)
		}
		s += fmt.Sprintf("@%d", ev.Kv.ModRevision)
		if ev.PrevKv != nil {
			s += " prev=" + string(ev.PrevKv.Value)
		}
		parts[i] = s
	}
	return strings.Join(parts, ",")
}

// nextResp is the next response on wch; the test fails after watchWait.
func nextResp(t testing.TB, wch clientv3.WatchChan) clientv3.WatchResponse {
	t.Helper()
	select {
	case resp, ok := <-wch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return resp
	case <-time.After(watchWait):
		t.Fatalf("no watch response within %v", watchWait)
	}
	return clientv3.WatchResponse{}
}

// created waits for the created response of a watch made with
// WithCreatedNotify and returns the channel.
func created(t testing.TB, wch clientv3.WatchChan) clientv3.WatchChan {
	t.Helper()
	if resp := nextResp(t, wch); !resp.Created {
		t.Fatalf("first response %+v, want created", resp)
	}
	return wch
}

// collectEvents reads wch until n events arrived and renders them.
func collectEvents(t testing.TB, wch clientv3.WatchChan, n int) string {
	t.Helper()
	var evs []*clientv3.Event
	for len(evs) < n {
		resp := nextResp(t, wch)
		must(t, resp.Err())
		evs = append(evs, resp.Events...)
	}
	return renderEvents(evs)
}

// noResp fails if wch delivers anything within watchQuiet.
func noResp(t testing.TB, wch clientv3.WatchChan) {
	t.Helper()
	select {
	case resp := <-wch:
		t.Fatalf("unexpected watch response: %+v", resp)
	case <-time.After(watchQuiet):
	}
}

func TestWatchLiveAndHistory(t *testing.T) {
	cli := startMember(t, memberOpts{}).client(t)
	mustPut(t, cli, "a", "1") // 2
	live := cli.Watch(watchCtx(t), "a", clientv3.WithCreatedNotify())
	if created := nextResp(t, live); !created.Created || created.Header.Revision != 2 {
		t.Fatalf("created = %+v, want created at revision 2", created)
	}
	mustPut(t, cli, "b", "x") // 3
	mustPut(t, cli, "a", "2") // 4
	_, err := cli.Delete(ctx(t), "a")
	must(t, err) // 5
	if got := collectEvents(t, live, 2); got != "PUT a=2@4,DELETE a@5" {
		t.Fatalf("live events %q", got)
	}

	hist := cli.Watch(watchCtx(t), "a", clientv3.WithRev(2))
	if got := collectEvents(t, hist, 3); got != "PUT a=1@2,PUT a=2@4,DELETE a@5" {
		t.Fatalf("history from revision 2: %q", got)
	}
	mustPut(t, cli, "a", "3")
	if got := collectEvents(t, hist, 1); got != "PUT a=3@6" {
		t.Fatalf("after history: %q", got)
	}
	noResp(t, hist)
}

func TestWatchPrefixAndRange(t *testing.T) {
	cli := startMember(t, memberOpts{}).client(t)
	prefix := created(t, cli.Watch(watchCtx(t), "foo/", clientv3.WithPrefix(), clientv3.WithCreatedNotify()))
	fromKey := created(t, cli.Watch(watchCtx(t), "foo/b", clientv3.WithFromKey(), clientv3.WithCreatedNotify()))
	rng := created(t, cli.Watch(watchCtx(t), "a", clientv3.WithRange("foo/b"), clientv3.WithCreatedNotify()))
	for _, k := range []string{"foo/a", "foo", "foo/b", "zz", "a"} {
		mustPut(t, cli, k, "v")
	}
	checks := []struct {
		name string
		wch  clientv3.WatchChan
		want string
	}{
		{"prefix foo/", prefix, "PUT foo/a=v@2,PUT foo/b=v@4"},
		{"from key foo/b", fromKey, "PUT foo/b=v@4,PUT zz=v@5"},
		{"range [a, foo/b)", rng, "PUT foo/a=v@2,PUT foo=v@3,PUT a=v@6"},
	}
	for _, c := range checks {
		n := strings.Count(c.want, ",") + 1
		if got := collectEvents(t, c.wch, n); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestWatchPrevKVAndFilters(t *testing.T) {
	cli := startMember(t, memberOpts{}).client(t)
	mustPut(t, cli, "k", "0") // 2
	prev := cli.Watch(watchCtx(t), "k", clientv3.WithPrevKV(), clientv3.WithRev(3))
	noPut := cli.Watch(watchCtx(t), "k", clientv3.WithFilterPut(), clientv3.WithRev(3))
	noDel := cli.Watch(watchCtx(t), "k", clientv3.WithFilterDelete(), clientv3.WithRev(3))
	mustPut(t, cli, "k", "1") // 3
	_, err := cli.Delete(ctx(t), "k")
	must(t, err)              // 4
	mustPut(t, cli, "k", "2") // 5
	if got := collectEvents(t, prev, 3); got != "PUT k=1@3 prev=0,DELETE k@4 prev=1,PUT k=2@5" {
		t.Errorf("prev_kv: %q", got)
	}
	if got := collectEvents(t, noPut, 1); got != "DELETE k@4" {
		t.Errorf("filter put: %q", got)
	}
	if got := collectEvents(t, noDel, 2); got != "PUT k=1@3,PUT k=2@5" {
		t.Errorf("filter delete: %q", got)
	}
	noResp(t, noPut)
}

func TestWatchCompacted(t *testing.T) {
	cli := startMember(t, memberOpts{}).client(t)
	for i := range 5 {
		mustPut(t, cli, "k", fmt.Sprint(i)) // 2..6
	}
	_, err := cli.Compact(ctx(t), 5)
	must(t, err)
	wch := cli.Watch(watchCtx(t), "k", clientv3.WithRev(3))
	resp := nextResp(t, wch)
	if resp.CompactRevision != 5 || !resp.Canceled || !sameErr(resp.Err(), rpctypes.ErrCompacted) {
		t.Fatalf("watch from compacted revision: %+v (err %v), want compact revision 5 and ErrCompacted", resp, resp.Err())
	}
	select {
	case _, ok := <-wch:
		if ok {
			t.Fatal("watch channel still delivers after compaction")
		}
	case <-time.After(watchWait):
		t.Fatal("watch channel not closed after compaction")
	}
	// The compacted revision itself is still there.
	if got := collectEvents(t, cli.Watch(watchCtx(t), "k", clientv3.WithRev(5)), 2); got != "PUT k=3@5,PUT k=4@6" {
		t.Fatalf("watch from the compacted revision: %q", got)
	}
}

func TestWatchProgress(t *testing.T) {
	m := startMember(t, memberOpts{args: []string{"--watch-progress-notify-interval", "200ms"}})
	cli := m.client(t)
	rev := mustPut(t, cli, "a", "1")
	notified := cli.Watch(watchCtx(t), "a", clientv3.WithProgressNotify(), clientv3.WithCreatedNotify())
	nextResp(t, notified)
	for range 2 {
		resp := nextResp(t, notified)
		if !resp.IsProgressNotify() || resp.Header.Revision != rev {
			t.Fatalf("got %+v, want a progress notification at revision %d", resp, rev)
		}
	}

	// RequestProgress is answered on the stream of the client's watchers.
	plain := cli.Watch(watchCtx(t), "b", clientv3.WithCreatedNotify())
	nextResp(t, plain)
	rev = mustPut(t, cli, "c", "1")
	must(t, cli.RequestProgress(watchCtx(t)))
	deadline := time.After(watchWait)
	for {
		select {
		case resp := <-plain:
			if !resp.IsProgressNotify() || resp.Header.Revision != rev {
				t.Fatalf("got %+v, want a progress notification at revision %d", resp, rev)
			}
			return
		case <-deadline:
			t.Fatal("no progress notification after RequestProgress")
		}
	}
}

func TestWatchCancel(t *testing.T) {
	cli := startMember(t, memberOpts{}).client(t)
	c, cancel := context.WithCancel(context.Background())
	wch := created(t, cli.Watch(c, "a", clientv3.WithCreatedNotify()))
	keep := created(t, cli.Watch(watchCtx(t), "a", clientv3.WithCreatedNotify()))
	mustPut(t, cli, "a", "1")
	collectEvents(t, wch, 1)
	collectEvents(t, keep, 1)
	cancel()
	select {
	case _, ok := <-wch:
		for ok {
			_, ok = <-wch
		}
	case <-time.After(watchWait):
		t.Fatal("canceled watch channel not closed")
	}
	mustPut(t, cli, "a", "2")
	if got := collectEvents(t, keep, 1); got != "PUT a=2@3" {
		t.Fatalf("other watcher after cancel: %q", got)
	}
}

// TestWatchManyOnOneStream: the client multiplexes watchers with the same
// context on one gRPC stream; each gets its own events.
func TestWatchManyOnOneStream(t *testing.T) {
	cli := startMember(t, memberOpts{}).client(t)
	wctx := watchCtx(t)
	const n = 100
	wchs := make([]clientv3.WatchChan, n)
	for i := range wchs {
		wchs[i] = cli.Watch(wctx, fmt.Sprintf("k%03d", i), clientv3.WithCreatedNotify())
	}
	for i := range wchs {
		created(t, wchs[i])
	}
	for i := range n {
		mustPut(t, cli, fmt.Sprintf("k%03d", i), fmt.Sprint(i))
	}
	for i, wch := range wchs {
		want := fmt.Sprintf("PUT k%03d=%d@%d", i, i, i+2)
		if got := collectEvents(t, wch, 1); got != want {
			t.Fatalf("watcher %d: %q, want %q", i, got, want)
		}
	}
}

// TestWatchLargeTxnFragment: a watcher with fragment=true gets a response
// larger than the request limit in pieces the client reassembles.
func TestWatchLargeTxnFragment(t *testing.T) {
	cli := startMember(t, memberOpts{}).client(t)
	value := strings.Repeat("v", 500<<10)
	for i := range 6 {
		mustPut(t, cli, fmt.Sprintf("big/%d", i), value) // 2..7, 3 MB in all
	}
	frag := cli.Watch(watchCtx(t), "big/", clientv3.WithPrefix(), clientv3.WithRev(1), clientv3.WithFragment())
	whole := cli.Watch(watchCtx(t), "big/", clientv3.WithPrefix(), clientv3.WithRev(1))
	for name, wch := range map[string]clientv3.WatchChan{"fragment": frag, "whole": whole} {
		got := collectEvents(t, wch, 6)
		if n := strings.Count(got, "PUT big/"); n != 6 {
			t.Errorf("%s: %d events, want 6", name, n)
		}
	}
}

// followerWatch is the fixture of the tests that watch through a
// follower while writing through the leader: the watch of a prefix on the
// follower, created before the first put, and what it must deliver.
type followerWatch struct {
	t      *testing.T
	leader *clientv3.Client
	prefix string
	wch    clientv3.WatchChan
	want   []string
}

// watchFollower opens the watch of prefix on member f and waits until it
// is created; puts go through member leader.
func watchFollower(t *testing.T, c *cluster, leader, f int, prefix string) *followerWatch {
	t.Helper()
	wch := c.clients[f].Watch(watchCtx(t), prefix, clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	nextResp(t, wch)
	return &followerWatch{t: t, leader: c.clients[leader], prefix: prefix, wch: wch}
}

// put writes key i (value i) through the leader and records the event the
// watch must deliver for it.
func (w *followerWatch) put(i int) {
	w.t.Helper()
	key := fmt.Sprintf("%s%03d", w.prefix, i)
	rev := mustPut(w.t, w.leader, key, fmt.Sprint(i))
	w.want = append(w.want, fmt.Sprintf("PUT %s=%d@%d", key, i, rev))
}

// wantEvents renders every recorded put as collectEvents renders events.
func (w *followerWatch) wantEvents() string { return strings.Join(w.want, ",") }

// TestWatchOnFollower: a watch served by a follower sees the writes made
// through the leader, in order.
func TestWatchOnFollower(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})
	leader := c.waitLeader(c.all()...)
	w := watchFollower(t, c, leader, c.except(leader)[0], "f/")
	for i := range 20 {
		w.put(i)
	}
	if got := collectEvents(t, w.wch, 20); got != w.wantEvents() {
		t.Fatalf("follower watch: %q, want %q", got, w.wantEvents())
	}
}

// TestWatchResumeAfterRestart: the client's watch on a member that
// restarts resumes after the last revision it received and delivers
// exactly the events written meanwhile.
func TestWatchResumeAfterRestart(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})
	leader := c.waitLeader(c.all()...)
	watched := c.except(leader)[0]
	w := watchFollower(t, c, leader, watched, "r/")
	for i := range 5 {
		w.put(i)
	}
	before := collectEvents(t, w.wch, 5)
	c.members[watched].kill()
	for i := 5; i < 15; i++ {
		w.put(i)
	}
	c.members[watched].restart()
	after := collectEvents(t, w.wch, 10)
	if got := before + "," + after; got != w.wantEvents() {
		t.Fatalf("events across the restart:\n got %q\nwant %q", got, w.wantEvents())
	}
	noResp(t, w.wch)
}

// TestWatchAcrossSnapshotInstall: a follower cut off while the leader
// compacts its log gets a snapshot, which replaces its store; the watch
// stream it serves ends with Unavailable and the client resumes it on the
// new store without losing or repeating an event.
func TestWatchAcrossSnapshotInstall(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3, proxies: true, args: []string{"--snapshot-count", "100", "--snapshot-catchup-entries", "10"}})
	leader := c.waitLeader(c.all()...)
	f := c.except(leader)[0]
	w := watchFollower(t, c, leader, f, "s/")
	w.put(0)
	before := collectEvents(t, w.wch, 1)
	c.isolate(f)
	const writes = 300
	for i := 1; i <= writes; i++ {
		w.put(i)
	}
	c.heal(f)
	after := collectEvents(t, w.wch, writes)
	if got := before + "," + after; got != w.wantEvents() {
		t.Fatalf("events across the snapshot install differ:\n got %q\nwant %q", got, w.wantEvents())
	}
	if log := logSince(t, c.members[f]); !strings.Contains(log, "applied snapshot") {
		t.Errorf("m%d did not apply a snapshot from the leader; its log:\n%s", f, log)
	}
	noResp(t, w.wch)
}
