// Package concurrency_test holds the tests of client/concurrency; they
// share one in-process member, so they live outside the client module.
package concurrency_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/client/concurrency"
	"github.com/cairnkv/cairn/server/config"
	"github.com/cairnkv/cairn/server/embed"
)

// endpoint is the client URL of the member every test of the package
// shares; tests use their own key prefixes. One member keeps the package
// cheap on a shared machine.
var endpoint string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "concurrency-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	member, err := startMember(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	member.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return code
}

// startMember starts a single-member cluster, retrying on fresh ports when
// another test binary took a port first.
func startMember(dir string) (*embed.Member, error) {
	for attempt := 1; ; attempt++ {
		m, err := tryStartMember(fmt.Sprintf("%s/%d", dir, attempt))
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) || attempt == 5 {
			return m, err
		}
	}
}

func tryStartMember(dir string) (*embed.Member, error) {
	clientURL, err := freeURL()
	if err != nil {
		return nil, err
	}
	peerURL, err := freeURL()
	if err != nil {
		return nil, err
	}
	cfg := config.NewConfig()
	cfg.Name, cfg.Dir = "m0", dir
	cfg.TickMs, cfg.ElectionMs = 10, 100
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = "m0=" + peerURL.String()
	m, err := embed.StartMember(cfg, zap.NewNop())
	if err != nil {
		return nil, err
	}
	select {
	case <-m.ReadyNotify():
	case err := <-m.Err():
		m.Close()
		return nil, err
	case <-time.After(20 * time.Second):
		m.Close()
		return nil, errors.New("member not ready")
	}
	endpoint = clientURL.String()
	return m, nil
}

func freeURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, err
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}, nil
}

// newClient connects to the shared member and closes when the test ends.
func newClient(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
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
	c, err := client.New(client.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainStreamInterceptor(signal)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, opened
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
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitKey blocks until key exists: a waiter has queued.
func waitKey(t *testing.T, ctx context.Context, c *client.Client, key string) {
	t.Helper()
	resp, err := c.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) > 0 {
		return
	}
	for wr := range c.Watch(ctx, key, client.WithRev(resp.Header.Revision+1)) {
		for _, ev := range wr.Events {
			if ev.Type == client.EventTypePut {
				return
			}
		}
	}
	t.Fatalf("key %q never appeared: %v", key, ctx.Err())
}
