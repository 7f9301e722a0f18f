package client_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/tests/harness"
)

// TestRangeRetriedAcrossDownEndpoint stops one of three members while
// reads run, and reads with it down: no read may fail.
func TestRangeRetriedAcrossDownEndpoint(t *testing.T) {
	ms := startCluster(t, 3)
	c := newClient(t, urls(ms)...)
	ctx := testCtx(t)
	must(c.Put(ctx, "k", "v"))
	var wg sync.WaitGroup
	var failures atomic.Int32
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Get(ctx, "k"); err != nil {
				failures.Add(1)
				t.Errorf("get while a member stops: %v", err)
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	stopMember(t, ms[2])
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	for range 30 {
		if r, err := c.Get(ctx, "k"); err != nil || r.Count != 1 {
			t.Fatalf("get with a member down: %v, %v", r, err)
		}
	}
}

// TestRangeSkipsDeadFirstEndpoint lists a port nobody listens on first.
func TestRangeSkipsDeadFirstEndpoint(t *testing.T) {
	live := startMember(t).Endpoint()
	dead := harness.FreeURL(t)
	c := newClient(t, dead, live)
	for range 10 {
		must(c.Get(testCtx(t), "k"))
	}
}

// TestPutRetriedWhenNeverSent sends a Put to an endpoint that is down: the
// dial fails, so the Put provably never left the client and is retried
// until the member comes up.
func TestPutRetriedWhenNeverSent(t *testing.T) {
	m := harness.NewMember(t, cairnBin, harness.Flags{Extra: raftTimings})
	c := harness.CairnClient(t, client.Config{Endpoints: []string{m.Endpoint()}, MaxRetries: 100})
	done := make(chan error, 1)
	go func() {
		_, err := c.Put(testCtx(t), "k", "v")
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("put returned before the member started: %v", err)
	default:
	}
	restartMember(t, m)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r := must(c.Get(testCtx(t), "k")); r.Count != 1 || r.Kvs[0].Version != 1 {
		t.Errorf("after retried put: %v", r.Kvs)
	}
}
