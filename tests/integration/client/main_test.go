// Package client_test holds the client library's tests that need running
// members (started in-process through server/embed). They live outside the
// client module so that the client never depends on the server.
package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/server/config"
	"github.com/cairnkv/cairn/server/embed"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// readyTimeout only keeps a broken member from hanging the test binary.
const readyTimeout = 20 * time.Second

// testMember is an in-process member that can be stopped and restarted on
// the same URLs and data dir.
type testMember struct {
	t   *testing.T
	cfg *config.Config
	url string

	mu sync.Mutex
	m  *embed.Member
}

// startCluster starts n members in-process and stops them when the test
// ends. Free ports are only free until someone else binds them (tests of
// other packages run at the same time), so a start that loses a port race
// is retried on fresh ports.
func startCluster(t *testing.T, n int) []*testMember { return startClusterWith(t, n, nil) }

// startClusterWith is startCluster with configure applied to every
// member's config (nil: none).
func startClusterWith(t *testing.T, n int, configure func(*config.Config)) []*testMember {
	t.Helper()
	return startClusterVia(t, n, configure, nil)
}

// startClusterVia is startClusterWith where member i advertises
// advertise(i, listen) as its peer URL while listening on listen (nil: the
// listen URL), so that peer traffic can pass through a test proxy.
func startClusterVia(t *testing.T, n int, configure func(*config.Config), advertise func(i int, listen url.URL) url.URL) []*testMember {
	t.Helper()
	for attempt := 1; ; attempt++ {
		members, err := tryStartCluster(t, n, configure, advertise)
		if err == nil {
			for _, tm := range members {
				t.Cleanup(tm.stop)
			}
			for _, tm := range members {
				tm.waitReady()
			}
			return members
		}
		if !errors.Is(err, syscall.EADDRINUSE) || attempt == 5 {
			t.Fatal(err)
		}
	}
}

// tryStartCluster starts n members on fresh ports; on an error it stops the
// ones it started.
func tryStartCluster(t *testing.T, n int, configure func(*config.Config), advertise func(int, url.URL) url.URL) ([]*testMember, error) {
	members := make([]*testMember, n)
	var initial []string
	free := freeURLs(t, 2*n)
	for i := range members {
		clientURL, peerURL := free[2*i], free[2*i+1]
		advertised := peerURL
		if advertise != nil {
			advertised = advertise(i, peerURL)
		}
		cfg := config.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = t.TempDir()
		cfg.TickMs, cfg.ElectionMs = 10, 100
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{advertised}
		if configure != nil {
			configure(cfg)
		}
		members[i] = &testMember{t: t, cfg: cfg, url: clientURL.String()}
		initial = append(initial, cfg.Name+"="+advertised.String())
	}
	for i, tm := range members {
		tm.cfg.InitialCluster = strings.Join(initial, ",")
		m, err := embed.StartMember(tm.cfg, zap.NewNop())
		if err != nil {
			for _, started := range members[:i] {
				started.stop()
			}
			return nil, err
		}
		tm.mu.Lock()
		tm.m = m
		tm.mu.Unlock()
	}
	return members, nil
}

func startMember(t *testing.T) *testMember { return startCluster(t, 1)[0] }

func (tm *testMember) start() {
	tm.t.Helper()
	m, err := embed.StartMember(tm.cfg, zap.NewNop())
	if err != nil {
		tm.t.Fatal(err)
	}
	tm.mu.Lock()
	tm.m = m
	tm.mu.Unlock()
}

func (tm *testMember) waitReady() {
	tm.t.Helper()
	tm.mu.Lock()
	m := tm.m
	tm.mu.Unlock()
	select {
	case <-m.ReadyNotify():
	case err := <-m.Err():
		tm.t.Fatal(err)
	case <-time.After(readyTimeout):
		tm.t.Fatal("member not ready")
	}
}

func (tm *testMember) stop() {
	tm.mu.Lock()
	m := tm.m
	tm.m = nil
	tm.mu.Unlock()
	if m != nil {
		m.Close()
	}
}

func (tm *testMember) restart() {
	tm.t.Helper()
	tm.stop()
	tm.start()
	tm.waitReady()
}

func urls(members []*testMember) []string {
	var out []string
	for _, tm := range members {
		out = append(out, tm.url)
	}
	return out
}

// freeURL is an http URL on a loopback port that is free right now.
func freeURL(t *testing.T) url.URL { return freeURLs(t, 1)[0] }

// freeURLs is n distinct such URLs: the listeners stay open until all n
// ports are taken, as the kernel may hand a just-closed port out again.
func freeURLs(t *testing.T, n int) []url.URL {
	t.Helper()
	urls := make([]url.URL, n)
	for i := range urls {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		urls[i] = url.URL{Scheme: "http", Host: l.Addr().String()}
	}
	return urls
}

// newClient connects to endpoints and closes the client when the test ends.
func newClient(t *testing.T, endpoints ...string) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// must returns v; an error fails the test with a panic (Go does not let a
// two-value call be an argument next to t).
func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("unexpected error: %v", err))
	}
	return v
}

func keys(r *client.GetResponse) string {
	var ks []string
	for _, kv := range r.Kvs {
		ks = append(ks, string(kv.Key))
	}
	return strings.Join(ks, ",")
}
