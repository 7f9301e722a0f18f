package client_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/tests/harness"
)

// putRecord is the outcome of one Put of the writer: acknowledged at a
// revision, or failed (then it may or may not have been applied).
type putRecord struct {
	value string
	rev   int64 // 0: failed
	err   error
}

// writeUntil puts unique values of key until stop closes and returns what
// each Put returned. A failed Put is not repeated: its value is spent.
func writeUntil(c *client.Client, key string, stop <-chan struct{}) []putRecord {
	var out []putRecord
	for i := 0; ; i++ {
		select {
		case <-stop:
			return out
		default:
		}
		v := fmt.Sprintf("v%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := c.Put(ctx, key, v)
		cancel()
		rec := putRecord{value: v, err: err}
		if err == nil {
			rec.rev = r.Header.Revision
		}
		out = append(out, rec)
	}
}

// collectUntil reads events from wc until one at revision rev or later.
func collectUntil(t *testing.T, wc client.WatchChan, rev int64) []*client.Event {
	t.Helper()
	var evs []*client.Event
	for len(evs) == 0 || evs[len(evs)-1].Kv.ModRevision < rev {
		select {
		case wr, ok := <-wc:
			if !ok {
				t.Fatalf("watch closed after %d events, waiting for revision %d", len(evs), rev)
			}
			if err := wr.Err(); err != nil {
				t.Fatalf("watch: %v", err)
			}
			evs = append(evs, wr.Events...)
		case <-time.After(readyTimeout):
			t.Fatalf("no event up to revision %d; last of %d events: %v", rev, len(evs), evs[len(evs)-1].Kv.ModRevision)
		}
	}
	return evs
}

// TestFailoverWhenMemberInUseIsKilled kills the member serving a watch
// while a writer puts unique values through the same client: the watch
// must deliver exactly the key's history, and no Put may be applied twice
// or be acknowledged without being applied.
func TestFailoverWhenMemberInUseIsKilled(t *testing.T) {
	ms := startCluster(t, 3)
	var log callLog
	c := harness.CairnClient(t, client.Config{Endpoints: urls(ms), DialTimeout: 5 * time.Second, DialOptions: log.dialOptions(), Logger: zaptest.NewLogger(t)})
	ctx := testCtx(t)
	const key = "failover"
	wc := c.Watch(ctx, key, client.WithCreatedNotify())
	if wr := <-wc; !wr.Created {
		t.Fatalf("first watch response %+v", wr)
	}
	inUse := memberAt(ms, log.last("/etcdserverpb.Watch/Watch"))
	if inUse < 0 {
		t.Fatalf("watch served by %q, not a member", log.last("/etcdserverpb.Watch/Watch"))
	}

	stop := make(chan struct{})
	var puts []putRecord
	var wg sync.WaitGroup
	wg.Go(func() { puts = writeUntil(c, key, stop) })
	before := collectUntil(t, wc, 20) // the writer is busy: kill mid-stream
	stopMember(t, ms[inUse])
	// Revisions after this one were made once the member was gone, so
	// another member must deliver them.
	killed := must(c.Get(ctx, key)).Header.Revision
	after := collectUntil(t, wc, killed+30)
	close(stop)
	wg.Wait()
	if moved := memberAt(ms, log.last("/etcdserverpb.Watch/Watch")); moved == inUse {
		t.Fatalf("watch still on killed member %d", inUse)
	}

	final := must(c.Get(ctx, key)).Header.Revision
	got := append(before, after...)
	if got[len(got)-1].Kv.ModRevision < final {
		got = append(got, collectUntil(t, wc, final)...)
	}
	history := collectUntil(t, c.Watch(ctx, key, client.WithRev(1)), final)
	checkSameEvents(t, got, history)
	checkPutsApplied(t, puts, history)
}

// checkSameEvents fails unless got and want are the same revisions with
// the same values, in order: no gap, no duplicate.
func checkSameEvents(t *testing.T, got, want []*client.Event) {
	t.Helper()
	show := func(evs []*client.Event) []string {
		var out []string
		for _, e := range evs {
			out = append(out, fmt.Sprintf("%d:%s", e.Kv.ModRevision, e.Kv.Value))
		}
		return out
	}
	if g, w := show(got), show(want); !slices.Equal(g, w) {
		t.Fatalf("watch delivered %d events, history has %d:\n got %v\nwant %v", len(g), len(w), g, w)
	}
}

// checkPutsApplied fails if a value appears twice in history or an
// acknowledged Put is missing from it or is at another revision.
func checkPutsApplied(t *testing.T, puts []putRecord, history []*client.Event) {
	t.Helper()
	at := map[string]int64{}
	for _, e := range history {
		v := string(e.Kv.Value)
		if _, dup := at[v]; dup {
			t.Errorf("value %s applied twice (revisions %d and %d)", v, at[v], e.Kv.ModRevision)
		}
		at[v] = e.Kv.ModRevision
	}
	failed := 0
	for _, p := range puts {
		if p.rev == 0 {
			t.Logf("put of %s failed: %v", p.value, p.err)
			failed++
			continue
		}
		if at[p.value] != p.rev {
			t.Errorf("put of %s acknowledged at revision %d, history has it at %d", p.value, p.rev, at[p.value])
		}
	}
	t.Logf("%d puts, %d failed, %d events", len(puts), failed, len(history))
}

// TestHealthCheckAbandonsPartitionedMember cuts the first endpoint's member
// off from its peers (clients still reach it and it answers Status) and
// issues linearizable Gets from that moment on: each must succeed within a
// command timeout shorter than the server's request timeout, so none may
// wait on the partitioned member, and the balancer must drop it.
func TestHealthCheckAbandonsPartitionedMember(t *testing.T) {
	ms, cut := startIsolatable(t, 3)
	admin := newClient(t, urls(ms)...)
	ctx := testCtx(t)
	victim := followerOf(ctx, t, admin, ms)
	eps := []string{ms[victim].Endpoint()}
	for i, tm := range ms {
		if i != victim {
			eps = append(eps, tm.Endpoint())
		}
	}
	var log callLog
	c := harness.CairnClient(t, client.Config{Endpoints: eps, DialTimeout: 5 * time.Second, HealthCheckInterval: 100 * time.Millisecond, DialOptions: log.dialOptions()})
	must(c.Put(ctx, "k", "v"))

	cut.Isolate(victim)
	// The server gives up on a read after 5s plus two election timeouts.
	const commandTimeout = 3 * time.Second
	// Round robin sends one attempt in len(eps) to each usable endpoint, so
	// the victim is out of the balancer once twice that many went elsewhere.
	window := 2 * len(eps)
	victimHost := strings.TrimPrefix(ms[victim].Endpoint(), "http://")
	abandoned := false
	giveUp := time.Now().Add(10 * time.Second)
	for i := 0; i < 20 || !abandoned; i++ {
		if time.Now().After(giveUp) {
			t.Fatalf("partitioned member still in use after %d gets: the last KV attempts went to %v", i, log.recent("/etcdserverpb.KV/", window))
		}
		gctx, cancel := context.WithTimeout(ctx, commandTimeout)
		_, err := c.Get(gctx, "k")
		cancel()
		if err != nil {
			t.Fatalf("get %d after the partition: %v (the last KV attempts went to %v)", i, err, log.recent("/etcdserverpb.KV/", window))
		}
		if served := log.recent("/etcdserverpb.KV/", window); len(served) == window && !slices.Contains(served, victimHost) {
			abandoned = true
		}
	}
	st := must(admin.Status(ctx, ms[victim].Endpoint())) // it still answers
	if st.Leader != 0 {
		t.Errorf("partitioned member still follows leader %x", st.Leader)
	}
}

// followerOf is the index of a member that is not the leader.
func followerOf(ctx context.Context, t *testing.T, c *client.Client, ms []*harness.Member) int {
	t.Helper()
	for i, tm := range ms {
		st := must(c.Status(ctx, tm.Endpoint()))
		if st.Leader != st.Header.MemberId {
			return i
		}
	}
	t.Fatal("every member leads")
	return -1
}

// TestLearnerEndpointsExcluded lists a learner first: the health check
// must take it out of the balanced endpoints, and no KV request may reach
// it while requests succeed on the voters.
func TestLearnerEndpointsExcluded(t *testing.T) {
	ms := startCluster(t, 3)
	learner := addLearner(t, newClient(t, urls(ms)...), ms)
	var log callLog
	core, logs := observer.New(zap.InfoLevel)
	c := harness.CairnClient(t, client.Config{
		Endpoints:   append([]string{learner.Endpoint()}, urls(ms)...),
		DialTimeout: 5 * time.Second, HealthCheckInterval: 100 * time.Millisecond,
		DialOptions: log.dialOptions(), Logger: zap.New(core),
	})
	// A health check round that finds the learner logs that it steers
	// requests off it, then hands gRPC the voters; the next round starts
	// only after that. So once a Status request reaches the learner after
	// the log, the learner is out of the balancer.
	const status = "/etcdserverpb.Maintenance/Status"
	steered, statusBefore := false, 0
	waitUntil(t, "learner left out", func() bool {
		if !steered {
			if logs.FilterMessage("steering requests off unhealthy endpoints").Len() > 0 {
				steered, statusBefore = true, log.servedBy(status, learner.Endpoint())
			}
			return false
		}
		return log.servedBy(status, learner.Endpoint()) > statusBefore
	})
	ctx := testCtx(t)
	for i := range 20 {
		must(c.Put(ctx, "k", fmt.Sprint(i)))
		must(c.Get(ctx, "k"))
	}
	if n := log.servedBy("/etcdserverpb.KV/", learner.Endpoint()); n != 0 {
		t.Errorf("learner served %d KV requests", n)
	}
	// The log does see the learner: the health check asks it.
	if log.servedBy(status, learner.Endpoint()) == 0 {
		t.Error("no Status request reached the learner")
	}
}

// waitUntil polls cond; readyTimeout only keeps a broken client from
// hanging the test.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !harness.Poll(readyTimeout, 10*time.Millisecond, cond) {
		t.Fatalf("timed out waiting until %s", what)
	}
}
