// Package concurrency_test holds the tests of client/concurrency; they
// share one cairn member (a process started through tests/harness), so
// they live outside the client module.
package concurrency_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/client/concurrency"
	"github.com/cairnkv/cairn/tests/harness"
)

// endpoint is the client URL of the member every test of the package
// shares; tests use their own key prefixes. One member keeps the package
// cheap on a shared machine.
var endpoint string

// TestMain starts the shared member, runs the tests and checks that they
// leave no goroutine of the client behind.
func TestMain(m *testing.M) { os.Exit(harness.NoLeaks(harness.Main(m, startMember))) }

// startMember starts the shared single-member cluster.
func startMember() error {
	bin, err := harness.Build("cairn")
	if err != nil {
		return err
	}
	// The raft timings of the in-process member these tests used to run:
	// they also set the shortest lease TTL (1 s).
	member, err := harness.StartShared(bin, harness.Flags{Extra: []string{"--heartbeat-interval", "10", "--election-timeout", "100"}})
	if err != nil {
		return err
	}
	endpoint = member.Endpoint()
	return nil
}

// newClient connects to the shared member and closes when the test ends.
func newClient(t *testing.T) *client.Client {
	t.Helper()
	return harness.CairnClient(t, client.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
}

// newWatchingClient is newClient whose channel receives a value each time
// the client opens a Watch stream: a waiter has queued its key and started
// waiting (the recipes open a watch only after their own write answered).
func newWatchingClient(t *testing.T) (*client.Client, <-chan struct{}) {
	t.Helper()
	opened := make(chan struct{}, 16)
	signal := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
		streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if method == "/etcdserverpb.Watch/Watch" {
			select {
			case opened <- struct{}{}:
			default:
			}
		}
		return streamer(ctx, desc, cc, method, opts...)
	}
	c := harness.CairnClient(t, client.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainStreamInterceptor(signal)}})
	return c, opened
}

// cancelWhileWaiting is the scenario the canceled Lock and Campaign tests
// share, run while another session holds prefix: wait starts the call on a
// session of its own, the call's context is canceled once it watches its
// predecessor, and the call must return context.Canceled and leave no key
// of its session under prefix. what names the call in failures.
func cancelWhileWaiting(t *testing.T, ctx context.Context, c *client.Client, prefix, what string,
	wait func(context.Context, *concurrency.Session) <-chan error) {
	t.Helper()
	wc, watching := newWatchingClient(t)
	s := newSession(t, wc)
	wctx, cancel := context.WithCancel(ctx)
	done := wait(wctx, s)
	<-watching
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled %s: %v, want context.Canceled", what, err)
	}
	key := fmt.Sprintf("%s/%x", prefix, int64(s.Lease()))
	if resp, err := c.Get(ctx, key); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("canceled %s left its key %s (%v, %v)", what, key, resp.GetKvs(), err)
	}
}

// newSession opens a session that is closed when the test ends.
func newSession(t *testing.T, c *client.Client, opts ...concurrency.SessionOption) *concurrency.Session {
	t.Helper()
	s, err := concurrency.NewSession(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testCtx bounds a test that would otherwise hang on a bug.
func testCtx(t *testing.T) context.Context { return harness.Ctx(t, 20*time.Second) }
