package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/tests/harness"
)

// Watch tests on a 3-member cluster: every watcher's event sequence is
// checked against the history read back with Get WithRev at every revision.

// wcEventsWait bounds waiting for watchers to deliver the events they owe;
// it is a give-up bound, not an expectation.
const wcEventsWait = 60 * time.Second

// wcEvent is one event, rendered with everything a watcher and the history
// read back must agree on.
type wcEvent struct {
	rev  int64
	key  string
	text string
}

func wcPutEvent(kv *mvccpb.KeyValue) wcEvent {
	return wcEvent{kv.ModRevision, string(kv.Key), fmt.Sprintf("%d:PUT %s=%s c%d v%d l%x",
		kv.ModRevision, kv.Key, kv.Value, kv.CreateRevision, kv.Version, kv.Lease)}
}

func wcDeleteEvent(key string, rev int64) wcEvent {
	return wcEvent{rev, key, fmt.Sprintf("%d:DELETE %s", rev, key)}
}

func wcFromWatch(ev *clientv3.Event) wcEvent {
	if ev.Type == mvccpb.DELETE {
		return wcDeleteEvent(string(ev.Kv.Key), ev.Kv.ModRevision)
	}
	return wcPutEvent(ev.Kv)
}

// wcHistory derives the events on the keys under prefix in revisions
// (from, to] from the key space read with Get WithRev at every revision:
// a key whose ModRevision is r was put at r, a key present at r-1 and gone
// at r was deleted at r. Within a revision events are in key order; every
// write these tests make touches its keys in ascending order, so that is
// the order the server applies them in.
func wcHistory(t testing.TB, cli *clientv3.Client, prefix string, from, to int64) []wcEvent {
	t.Helper()
	read := func(rev int64) map[string]*mvccpb.KeyValue {
		resp, err := cli.Get(ctx(t), prefix, clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithSerializable())
		must(t, err)
		m := make(map[string]*mvccpb.KeyValue, len(resp.Kvs))
		for _, kv := range resp.Kvs {
			m[string(kv.Key)] = kv
		}
		return m
	}
	var h []wcEvent
	prev := read(from)
	for r := from + 1; r <= to; r++ {
		cur := read(r)
		var evs []wcEvent
		for k, kv := range cur {
			switch {
			case kv.ModRevision == r:
				evs = append(evs, wcPutEvent(kv))
			case prev[k] == nil || prev[k].ModRevision != kv.ModRevision:
				t.Fatalf("history: %s at revision %d has mod revision %d, at revision %d %v", k, r, kv.ModRevision, r-1, prev[k])
			}
		}
		for k := range prev {
			if cur[k] == nil {
				evs = append(evs, wcDeleteEvent(k, r))
			}
		}
		slices.SortFunc(evs, func(a, b wcEvent) int { return strings.Compare(a.key, b.key) })
		h = append(h, evs...)
		prev = cur
	}
	return h
}

// wcWatcher records what one watch channel delivers and checks the
// response structure as it goes: no errors or cancellation, revisions
// ascending, and all events of a revision in one response (the first
// event of a response is newer than the last of the one before).
type wcWatcher struct {
	name  string
	start int64 // first revision the watcher must see
	match func(key string) bool
	slow  time.Duration // sleep after every receive

	mu       sync.Mutex
	evs      []wcEvent
	resps    int // responses carrying events
	lastRev  int64
	lastAt   time.Time // when the last event arrived
	problems []string
	closed   chan struct{}
}

// wcWatch starts a watch with WithCreatedNotify (and WithRev(rev) if rev >
// 0), waits for its created response and records it from then on.
func wcWatch(t testing.TB, cli *clientv3.Client, wctx context.Context, name string, rev int64, slow time.Duration,
	key string, match func(string) bool, opts ...clientv3.OpOption) *wcWatcher {
	t.Helper()
	opts = append(opts, clientv3.WithCreatedNotify())
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	wch := cli.Watch(wctx, key, opts...)
	resp := nextResp(t, wch)
	if !resp.Created || resp.Err() != nil {
		t.Fatalf("watcher %s: first response %+v (err %v), want created", name, resp, resp.Err())
	}
	w := &wcWatcher{name: name, start: rev, match: match, slow: slow, closed: make(chan struct{})}
	if rev == 0 {
		// The created response's revision is read after the watcher is
		// registered (by etcd as well), so it is exact only when no write
		// is being applied meanwhile: callers create live watchers with no
		// write in flight and after wcSettle.
		w.start = resp.Header.Revision + 1
	}
	go w.run(wch)
	return w
}

func (w *wcWatcher) problem(format string, args ...any) {
	if len(w.problems) < 10 {
		w.problems = append(w.problems, fmt.Sprintf(format, args...))
	}
}

func (w *wcWatcher) run(wch clientv3.WatchChan) {
	defer close(w.closed)
	for resp := range wch {
		if w.slow > 0 {
			time.Sleep(w.slow)
		}
		now := time.Now()
		w.mu.Lock()
		if resp.Canceled || resp.Err() != nil {
			w.problem("response %+v: canceled=%v err=%v", resp.Header, resp.Canceled, resp.Err())
		}
		for i, ev := range resp.Events {
			e := wcFromWatch(ev)
			if i == 0 && e.rev <= w.lastRev {
				w.problem("response %d starts with revision %d, the previous one ended with %d (revision split or repeated)", w.resps+1, e.rev, w.lastRev)
			}
			if i > 0 && e.rev < w.evs[len(w.evs)-1].rev {
				w.problem("response %d: revision %d after %d", w.resps+1, e.rev, w.evs[len(w.evs)-1].rev)
			}
			w.evs = append(w.evs, e)
		}
		if n := len(resp.Events); n > 0 {
			w.resps++
			w.lastRev = resp.Events[n-1].Kv.ModRevision
			w.lastAt = now
		}
		w.mu.Unlock()
	}
}

func (w *wcWatcher) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.evs)
}

// want is the part of h this watcher must deliver.
func (w *wcWatcher) want(h []wcEvent) []wcEvent {
	var out []wcEvent
	for _, e := range h {
		if e.rev >= w.start && w.match(e.key) {
			out = append(out, e)
		}
	}
	return out
}

// wcSeqDiff describes how got differs from want ("" if equal).
func wcSeqDiff(got, want []wcEvent) string {
	i := 0
	for i < len(got) && i < len(want) && got[i].text == want[i].text {
		i++
	}
	if i == len(got) && i == len(want) {
		return ""
	}
	render := func(s []wcEvent) string {
		lo, hi := max(0, i-2), min(len(s), i+3)
		var parts []string
		for _, e := range s[lo:hi] {
			parts = append(parts, e.text)
		}
		return fmt.Sprintf("[%d:%d] %s", lo, hi, strings.Join(parts, " | "))
	}
	return fmt.Sprintf("%d events, want %d; first difference at %d:\n   got %s\n  want %s", len(got), len(want), i, render(got), render(want))
}

// wcCheck waits until every watcher has delivered at least the events of h
// it owes, gives them watchQuiet to deliver anything extra, and then
// checks each one's sequence against h.
func wcCheck(t testing.TB, ws []*wcWatcher, h []wcEvent) {
	t.Helper()
	wants := make([][]wcEvent, len(ws))
	for i, w := range ws {
		wants[i] = w.want(h)
	}
	deadline := time.Now().Add(wcEventsWait)
	for {
		var behind []string
		for i, w := range ws {
			if n := w.count(); n < len(wants[i]) {
				behind = append(behind, fmt.Sprintf("%s %d/%d", w.name, n, len(wants[i])))
			}
		}
		if len(behind) == 0 {
			break
		}
		if time.Now().After(deadline) {
			if len(behind) > 10 {
				behind = append(behind[:10], fmt.Sprintf("... %d more", len(behind)-10))
			}
			t.Fatalf("watchers still short of events after %v: %s", wcEventsWait, strings.Join(behind, ", "))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(watchQuiet)
	failed := 0
	for i, w := range ws {
		w.mu.Lock()
		d := wcSeqDiff(w.evs, wants[i])
		problems := slices.Clone(w.problems)
		w.mu.Unlock()
		if d == "" && len(problems) == 0 {
			continue
		}
		if failed++; failed <= 5 {
			t.Errorf("watcher %s (from revision %d): %s; problems: %q", w.name, w.start, d, problems)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d watchers deviate from the history", failed, len(ws))
	}
}

// wcSettle makes every member serve a linearizable read, so that each has
// applied every acknowledged write before live watchers are created.
func wcSettle(t testing.TB, c *cluster) {
	t.Helper()
	for i := range c.members {
		c.syncRead(t, i)
	}
}

// wcKey is key number i under prefix.
func wcKey(prefix string, i int) string { return fmt.Sprintf("%sk%02d", prefix, i) }

// wcOp makes one pseudo-random write on keys under prefix: a put, a
// delete, a transaction of several puts and deletes, a range delete, or a
// put outside prefix. Every write touches its keys in ascending order.
func wcOp(cctx context.Context, cli *clientv3.Client, rng *rand.Rand, prefix string, nkeys int, val string) error {
	var err error
	switch x := rng.IntN(100); {
	case x < 50:
		_, err = cli.Put(cctx, wcKey(prefix, rng.IntN(nkeys)), val)
	case x < 62:
		_, err = cli.Delete(cctx, wcKey(prefix, rng.IntN(nkeys)))
	case x < 85:
		idx := rng.Perm(nkeys)[:2+rng.IntN(2)]
		slices.Sort(idx)
		var ops []clientv3.Op
		for j, i := range idx {
			if rng.IntN(3) == 0 {
				ops = append(ops, clientv3.OpDelete(wcKey(prefix, i)))
			} else {
				ops = append(ops, clientv3.OpPut(wcKey(prefix, i), fmt.Sprintf("%s.%d", val, j)))
			}
		}
		_, err = cli.Txn(cctx).Then(ops...).Commit()
	case x < 93:
		a := rng.IntN(nkeys - 1)
		b := a + 1 + rng.IntN(min(4, nkeys-a-1))
		_, err = cli.Delete(cctx, wcKey(prefix, a), clientv3.WithRange(wcKey(prefix, b)))
	default:
		_, err = cli.Put(cctx, strings.TrimSuffix(prefix, "/")+"-other/"+val, val)
	}
	return err
}

// wcLoad runs writers making wcOp writes.
type wcLoad struct {
	stopc  chan struct{}
	done   chan struct{}
	ok     atomic.Int64
	failed atomic.Int64
	mu     sync.Mutex
	errs   []string
}

// wcStartLoad starts perClient writers on every client in clis, each
// making ops writes (0: until stopped); each write is bounded by timeout.
func wcStartLoad(clis []*clientv3.Client, perClient, ops int, prefix string, nkeys int, timeout time.Duration) *wcLoad {
	l := &wcLoad{stopc: make(chan struct{}), done: make(chan struct{})}
	var wg sync.WaitGroup
	for c, cli := range clis {
		for k := range perClient {
			w := c*perClient + k
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(7, uint64(w)))
				for n := 0; ops == 0 || n < ops; n++ {
					select {
					case <-l.stopc:
						return
					default:
					}
					cctx, cancel := context.WithTimeout(context.Background(), timeout)
					err := wcOp(cctx, cli, rng, prefix, nkeys, fmt.Sprintf("w%d-%d", w, n))
					cancel()
					if err != nil {
						l.failed.Add(1)
						l.mu.Lock()
						if len(l.errs) < 5 {
							l.errs = append(l.errs, describeErr(err))
						}
						l.mu.Unlock()
						continue
					}
					l.ok.Add(1)
				}
			}()
		}
	}
	go func() { wg.Wait(); close(l.done) }()
	return l
}

// wait waits for the writers to finish, failing after bound.
func (l *wcLoad) wait(t testing.TB, bound time.Duration) {
	t.Helper()
	select {
	case <-l.done:
	case <-time.After(bound):
		t.Fatalf("writers not done after %v: %d writes ok, %d failed", bound, l.ok.Load(), l.failed.Load())
	}
}

// stop stops the writers and waits for them.
func (l *wcLoad) stop(t testing.TB) {
	t.Helper()
	select {
	case <-l.stopc:
	default:
		close(l.stopc)
	}
	l.wait(t, clusterWait)
}

// waitOK waits until the writers have made n more successful writes.
func (l *wcLoad) waitOK(t testing.TB, n int64) {
	t.Helper()
	want := l.ok.Load() + n
	if !harness.Poll(clusterWait, 10*time.Millisecond, func() bool { return l.ok.Load() >= want }) {
		t.Fatalf("writes stalled: %d ok, %d failed", l.ok.Load(), l.failed.Load())
	}
}

func (l *wcLoad) firstErrs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errs)
}

func wcPrefix(p string) func(string) bool {
	return func(k string) bool { return strings.HasPrefix(k, p) }
}
func wcExact(key string) func(string) bool { return func(k string) bool { return k == key } }
func wcRange(a, b string) func(string) bool {
	return func(k string) bool { return k >= a && k < b }
}

// TestWatchClusterIdenticalEvents: watchers on every member - on the
// prefix, a single key and a range, live and from a past revision, on two
// streams per member - deliver exactly the history read back with Get
// WithRev while several clients write concurrently through every member:
// same revisions and events, in order, no gaps or duplicates, each
// revision's events in one response.
func TestWatchClusterIdenticalEvents(t *testing.T) {
	perWriter := 100
	if testing.Short() {
		perWriter = 25
	}
	const prefix, nkeys = "wc/", 16
	c := startCluster(t, clusterOpts{size: 3})
	var seedFrom int64
	for i := range nkeys {
		rev := mustPut(t, c.clients[i%3], wcKey(prefix, i), "seed")
		if i == 0 {
			seedFrom = rev
		}
	}
	mustPut(t, c.clients[0], "wc-other/seed", "x")
	wcSettle(t, c)

	var ws []*wcWatcher
	for i, cli := range c.clients {
		plain := watchCtx(t)
		// WithRequireLeader puts these watchers on a second stream.
		second := clientv3.WithRequireLeader(watchCtx(t))
		own := wcKey(prefix, 3+i)
		ws = append(ws,
			wcWatch(t, cli, plain, fmt.Sprintf("m%d/prefix", i), 0, 0, prefix, wcPrefix(prefix), clientv3.WithPrefix()),
			wcWatch(t, cli, second, fmt.Sprintf("m%d/prefix@%d", i, seedFrom), seedFrom, 0, prefix, wcPrefix(prefix), clientv3.WithPrefix()),
			wcWatch(t, cli, plain, fmt.Sprintf("m%d/k00", i), 0, 0, wcKey(prefix, 0), wcExact(wcKey(prefix, 0))),
			wcWatch(t, cli, second, fmt.Sprintf("m%d/%s@%d", i, own, seedFrom+1), seedFrom+1, 0, own, wcExact(own)),
			wcWatch(t, cli, plain, fmt.Sprintf("m%d/[k04,k10)", i), 0, 0, wcKey(prefix, 4), wcRange(wcKey(prefix, 4), wcKey(prefix, 10)),
				clientv3.WithRange(wcKey(prefix, 10))),
		)
	}

	load := wcStartLoad(c.clients, 2, perWriter, prefix, nkeys, requestTimeout)
	load.wait(t, 2*time.Minute)
	if f := load.failed.Load(); f > 0 {
		t.Fatalf("%d of %d writes failed: %q", f, f+load.ok.Load(), load.firstErrs())
	}
	final := currentRev(t, c.clients[0])
	c.syncRead(t, 0)
	h := wcHistory(t, c.clients[0], prefix, seedFrom-1, final)
	t.Logf("%d writes, revisions %d..%d, %d events under %s", load.ok.Load(), seedFrom, final, len(h), prefix)
	wcCheck(t, ws, h)
	c.assertConsistent(t, c.all()...)
}

// TestWatchClusterResumeOnOtherMember: a watch served by the leader, through
// a client that knows only the leader, runs while clients write through the
// other members; the leader is SIGKILLed, and a new watch on another member
// from the last received revision + 1 continues it: together they deliver
// the history exactly, with no gap and no duplicate.
func TestWatchClusterResumeOnOtherMember(t *testing.T) {
	before, after := int64(150), int64(150)
	if testing.Short() {
		before, after = 40, 40
	}
	const prefix, nkeys = "wr/", 12
	c := startCluster(t, clusterOpts{size: 3})
	l := c.waitLeader(c.all()...)
	others := c.except(l)
	wcSettle(t, c)

	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := wcWatch(t, c.clients[l], wctx, fmt.Sprintf("m%d/prefix", l), 0, 0, prefix, wcPrefix(prefix), clientv3.WithPrefix())
	from := first.start

	load := wcStartLoad([]*clientv3.Client{c.clients[others[0]], c.clients[others[1]]}, 2, 0, prefix, nkeys, failTimeout)
	defer func() {
		select {
		case <-load.stopc:
		default:
			close(load.stopc)
		}
	}()
	load.waitOK(t, before)
	if !harness.Poll(watchWait, 10*time.Millisecond, func() bool { return first.count() > 0 }) {
		t.Fatalf("the watch on m%d delivered nothing within %v", l, watchWait)
	}
	c.members[l].kill()
	cancel()
	select {
	case <-first.closed:
	case <-time.After(watchWait):
		t.Fatalf("watch channel on the killed m%d not closed %v after canceling it", l, watchWait)
	}
	first.mu.Lock()
	part1, problems := slices.Clone(first.evs), slices.Clone(first.problems)
	first.mu.Unlock()
	if len(problems) > 0 {
		t.Fatalf("watch on m%d before the kill: %q", l, problems)
	}
	last := part1[len(part1)-1].rev
	nl := c.waitLeader(others...)
	t.Logf("killed leader m%d after %d events (last revision %d); m%d leads now", l, len(part1), last, nl)

	o := others[0]
	second := wcWatch(t, c.clients[o], watchCtx(t), fmt.Sprintf("m%d/prefix@%d", o, last+1), last+1, 0, prefix, wcPrefix(prefix), clientv3.WithPrefix())
	load.waitOK(t, after)
	load.stop(t)
	final := currentRev(t, c.clients[o])
	h := wcHistory(t, c.clients[o], prefix, from-1, final)
	t.Logf("%d writes ok, %d failed; revisions %d..%d, %d events", load.ok.Load(), load.failed.Load(), from, final, len(h))

	wcCheck(t, []*wcWatcher{second}, h)
	second.mu.Lock()
	got := append(part1, second.evs...)
	second.mu.Unlock()
	if d := wcSeqDiff(got, first.want(h)); d != "" {
		t.Fatalf("watch on m%d up to revision %d followed by the watch on m%d from %d: %s", l, last, o, last+1, d)
	}
}

// TestWatchClusterManyWatchersSlowReader: 1,000 watchers (200 in -short)
// share one client and stream; one of them reads slowly. While clients
// write through every member, the writes all complete, and every watcher,
// the slow one included, gets exactly its events in order.
func TestWatchClusterManyWatchersSlowReader(t *testing.T) {
	watchers, writes := 1000, 1200
	if testing.Short() {
		watchers, writes = 200, 300
	}
	const prefix, nkeys, writersPerClient = "ws/", 50, 2
	const slowRead = 10 * time.Millisecond
	c := startCluster(t, clusterOpts{size: 3})
	l := c.waitLeader(c.all()...)
	f := c.except(l)[0]
	cli := c.members[f].client(t)
	wctx := watchCtx(t)
	wcSettle(t, c)

	ws := make([]*wcWatcher, watchers)
	for i := range ws {
		var slow time.Duration
		if i == 0 {
			slow = slowRead
		}
		if i%10 == 0 {
			ws[i] = wcWatch(t, cli, wctx, fmt.Sprintf("#%d prefix", i), 0, slow, prefix, wcPrefix(prefix), clientv3.WithPrefix())
		} else {
			k := wcKey(prefix, i%nkeys)
			ws[i] = wcWatch(t, cli, wctx, fmt.Sprintf("#%d %s", i, k), 0, 0, k, wcExact(k))
		}
	}
	from := ws[0].start
	for _, w := range ws {
		if w.start != from {
			t.Fatalf("watcher %s starts at revision %d, %s at %d, with no write in between", w.name, w.start, ws[0].name, from)
		}
	}

	start := time.Now()
	per := writes / (writersPerClient * len(c.clients))
	load := wcStartLoad(c.clients, writersPerClient, per, prefix, nkeys, requestTimeout)
	load.wait(t, 2*time.Minute)
	took := time.Since(start)
	if fl := load.failed.Load(); fl > 0 {
		t.Fatalf("%d of %d writes failed: %q", fl, fl+load.ok.Load(), load.firstErrs())
	}
	final := currentRev(t, c.clients[f])
	h := wcHistory(t, c.clients[f], prefix, from-1, final)
	ws[0].mu.Lock()
	slowHad, slowWant := len(ws[0].evs), len(ws[0].want(h))
	ws[0].mu.Unlock()
	t.Logf("%d watchers; %d writes in %v (revisions %d..%d, %d events); the slow reader had %d of its %d events then",
		watchers, load.ok.Load(), took.Round(time.Millisecond), from, final, len(h), slowHad, slowWant)
	wcCheck(t, ws, h)
	ws[0].mu.Lock()
	t.Logf("the slow reader finished %v after the writes", ws[0].lastAt.Sub(start.Add(took)).Round(time.Millisecond))
	ws[0].mu.Unlock()
}

// TestWatchClusterLeaseExpiryOnce: a lease with several keys, granted and
// never kept alive, outlives the leader (SIGKILLed during the lease's life,
// then restarted). It expires exactly once: one revision deletes all its
// keys, every member's watcher sees that revision's DELETE events in one
// response and nothing else, and the history read back agrees.
func TestWatchClusterLeaseExpiryOnce(t *testing.T) {
	const prefix, ttl = "wl/", 5
	keys := []string{"wl/a", "wl/b", "wl/c", "wl/d", "wl/e"}
	c := startCluster(t, clusterOpts{size: 3})
	l := c.waitLeader(c.all()...)
	f := c.except(l)[0]

	granted := time.Now()
	g, err := c.clients[f].Grant(ctx(t), ttl)
	must(t, err)
	if g.TTL != ttl {
		t.Fatalf("Grant: TTL %d, want %d", g.TTL, ttl)
	}
	mustPut(t, c.clients[f], "wl/keep", "no lease")
	var from int64
	for i, k := range keys {
		put, err := c.clients[i%3].Put(ctx(t), k, "v", clientv3.WithLease(g.ID))
		must(t, err)
		from = put.Header.Revision + 1
	}
	// The watchers name their start revision: the watcher on the leader
	// resumes after the restart, and the client resumes a watch created
	// without one, that has had no events yet, at the created response's
	// revision itself, which would deliver the last put again.
	var ws []*wcWatcher
	for i, cli := range c.clients {
		ws = append(ws, wcWatch(t, cli, watchCtx(t), fmt.Sprintf("m%d/prefix@%d", i, from), from, 0, prefix, wcPrefix(prefix), clientv3.WithPrefix()))
	}

	// Kill the leader during the lease's life (a second into it at most,
	// if the puts were quick), then bring it back.
	time.Sleep(time.Until(granted.Add(time.Second)))
	c.members[l].kill()
	nl := c.waitLeader(c.except(l)...)
	t.Logf("killed leader m%d %v after the grant; m%d leads now", l, time.Since(granted).Round(time.Millisecond), nl)
	c.members[l].restart()
	c.waitLeader(c.all()...)

	deadline := time.Now().Add(clusterWait)
	for _, w := range ws {
		for w.count() < len(keys) {
			if time.Now().After(deadline) {
				t.Fatalf("watcher %s saw %d DELETE events within %v, want %d", w.name, w.count(), clusterWait, len(keys))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// A second expiry would find nothing to delete; give it the time of
	// another TTL to show up as a revision or event anyway.
	time.Sleep(ttl * time.Second)
	var delRev int64
	for _, w := range ws {
		w.mu.Lock()
		evs, resps, problems, at := slices.Clone(w.evs), w.resps, slices.Clone(w.problems), w.lastAt
		w.mu.Unlock()
		if len(problems) > 0 {
			t.Errorf("watcher %s: %q", w.name, problems)
		}
		if len(evs) == 0 {
			continue
		}
		if delRev == 0 {
			delRev = evs[0].rev
			t.Logf("the lease expired at revision %d, seen %v after the grant", delRev, at.Sub(granted).Round(time.Millisecond))
		}
		var want []wcEvent
		for _, k := range keys {
			want = append(want, wcDeleteEvent(k, delRev))
		}
		if d := wcSeqDiff(evs, want); d != "" || resps != 1 {
			t.Errorf("watcher %s: %d responses, want 1 with the DELETE of every lease key at revision %d; events: %s", w.name, resps, delRev, d)
		}
		if e := at.Sub(granted); e < ttl*time.Second {
			t.Errorf("watcher %s saw the lease expire %v after the grant, before its TTL of %ds", w.name, e, ttl)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	final := c.syncRead(t, nl)
	if final != delRev {
		t.Errorf("revision is %d after the expiry at %d, with no other writes", final, delRev)
	}
	h := wcHistory(t, c.clients[nl], prefix, from-1, final)
	var want []wcEvent
	for _, k := range keys {
		want = append(want, wcDeleteEvent(k, delRev))
	}
	if d := wcSeqDiff(h, want); d != "" {
		t.Errorf("history read back with Get WithRev from revision %d: %s", from, d)
	}
	for i, cli := range c.clients {
		c.syncRead(t, i)
		resp, err := cli.Get(ctx(t), prefix, clientv3.WithPrefix(), clientv3.WithSerializable())
		must(t, err)
		if got := kvPairs(resp.Kvs); got != "wl/keep=no lease" {
			t.Errorf("m%d after the expiry: %q, want only wl/keep", i, got)
		}
		tl, err := cli.TimeToLive(ctx(t), g.ID)
		must(t, err)
		if tl.TTL != -1 {
			t.Errorf("TimeToLive via m%d of the expired lease: TTL %d, want -1", i, tl.TTL)
		}
	}
	c.assertConsistent(t, c.all()...)
}
