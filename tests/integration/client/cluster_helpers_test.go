package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/pkg/proxy"
	"github.com/cairnkv/cairn/server/config"
	"github.com/cairnkv/cairn/server/embed"
)

// peerNet puts a fault proxy in front of every member's peer listener, so
// that a test can cut one member off from the others while its clients
// still reach it.
type peerNet struct {
	t       *testing.T
	proxies []*proxy.Proxy

	mu       sync.Mutex
	ids      []uint64 // member IDs, by index
	isolated map[int]bool
}

func newPeerNet(t *testing.T) *peerNet { return &peerNet{t: t, isolated: map[int]bool{}} }

// advertise is startClusterVia's hook: member i advertises a new proxy to
// its peer listener.
func (pn *peerNet) advertise(i int, listen url.URL) url.URL {
	p, err := proxy.New(proxy.Config{Listen: "127.0.0.1:0", Target: listen.Host})
	if err != nil {
		pn.t.Fatal(err)
	}
	pn.t.Cleanup(func() { p.Close() })
	pn.mu.Lock()
	if i < len(pn.proxies) {
		pn.proxies[i] = p // a retried start replaces the lost attempt's proxy
	} else {
		pn.proxies = append(pn.proxies, p)
	}
	pn.mu.Unlock()
	p.ModifyTx(func(b []byte) []byte { return pn.filter(i, b) })
	return url.URL{Scheme: "http", Host: p.Addr()}
}

// filter drops what an isolated member sends to member j. All senders to j
// share j's proxy; the raft transport names the sender in X-Server-From,
// which opens every peer request, so dropping that chunk cuts the request.
func (pn *peerNet) filter(j int, b []byte) []byte {
	pn.mu.Lock()
	defer pn.mu.Unlock()
	lower := bytes.ToLower(b)
	for k := range pn.isolated {
		if k != j && bytes.Contains(lower, fmt.Appendf(nil, "x-server-from: %x\r\n", pn.ids[k])) {
			return nil
		}
	}
	return b
}

// learnIDs asks every member for its ID; isolate needs them.
func (pn *peerNet) learnIDs(ctx context.Context, c *client.Client, ms []*testMember) {
	ids := make([]uint64, len(ms))
	for i, tm := range ms {
		ids[i] = must(c.Status(ctx, tm.url)).Header.MemberId
	}
	pn.mu.Lock()
	pn.ids = ids
	pn.mu.Unlock()
}

// isolate cuts member i off from its peers: its own proxy discards
// everything and the others drop its requests. Open connections are reset
// so that the filters see every request from now on.
func (pn *peerNet) isolate(i int) {
	pn.mu.Lock()
	pn.isolated[i] = true
	proxies := pn.proxies
	pn.mu.Unlock()
	proxies[i].BlackholeTx()
	proxies[i].BlackholeRx()
	for _, p := range proxies {
		p.ResetConnections()
	}
}

// callLog records the member address that served each attempt of each
// client call, through interceptors the client runs inside its own retry
// interceptor.
type callLog struct {
	mu    sync.Mutex
	calls []servedCall
}

type servedCall struct{ method, addr string }

func (cl *callLog) record(method string, addr net.Addr) {
	if addr == nil {
		return
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.calls = append(cl.calls, servedCall{method, addr.String()})
}

func (cl *callLog) dialOptions() []grpc.DialOption {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		var p peer.Peer
		err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Peer(&p))...)
		cl.record(method, p.Addr)
		return err
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err == nil {
			if p, ok := peer.FromContext(s.Context()); ok {
				cl.record(method, p.Addr)
			}
		}
		return s, err
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

// servedBy counts the attempts of methods with the given prefix that
// member url served.
func (cl *callLog) servedBy(prefix, memberURL string) int {
	host := strings.TrimPrefix(memberURL, "http://")
	cl.mu.Lock()
	defer cl.mu.Unlock()
	n := 0
	for _, c := range cl.calls {
		if strings.HasPrefix(c.method, prefix) && c.addr == host {
			n++
		}
	}
	return n
}

// last is the address that served the latest attempt of method.
func (cl *callLog) last(method string) string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for i := len(cl.calls) - 1; i >= 0; i-- {
		if cl.calls[i].method == method {
			return cl.calls[i].addr
		}
	}
	return ""
}

// recent is the addresses that served the last n attempts of methods with
// the given prefix, oldest first (fewer when there were fewer).
func (cl *callLog) recent(prefix string, n int) []string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	var out []string
	for i := len(cl.calls) - 1; i >= 0 && len(out) < n; i-- {
		if strings.HasPrefix(cl.calls[i].method, prefix) {
			out = append(out, cl.calls[i].addr)
		}
	}
	slices.Reverse(out)
	return out
}

// memberAt is the index of the member whose client URL has host addr.
func memberAt(ms []*testMember, addr string) int {
	for i, tm := range ms {
		if strings.TrimPrefix(tm.url, "http://") == addr {
			return i
		}
	}
	return -1
}

// addLearner adds a learner to the cluster of ms through c and starts it;
// it is stopped when the test ends.
func addLearner(t *testing.T, c *client.Client, ms []*testMember) *testMember {
	t.Helper()
	free := freeURLs(t, 2)
	clientURL, peerURL := free[0], free[1]
	// As etcd, --strict-reconfig-check refuses any member add ("unhealthy
	// cluster") until every voter has been connected for 5 s.
	waitUntil(t, "learner added", func() bool {
		_, err := c.MemberAddAsLearner(testCtx(t), []string{peerURL.String()})
		if err != nil && !errors.Is(err, rpctypes.ErrUnhealthy) {
			t.Fatalf("add learner: %v", err)
		}
		return err == nil
	})
	cfg := config.NewConfig()
	cfg.Name = "learner"
	cfg.Dir = t.TempDir()
	cfg.TickMs, cfg.ElectionMs = ms[0].cfg.TickMs, ms[0].cfg.ElectionMs
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.ClusterState = config.ClusterStateExisting
	cfg.InitialCluster = ms[0].cfg.InitialCluster + ",learner=" + peerURL.String()
	m, err := embed.StartMember(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	tm := &testMember{t: t, cfg: cfg, url: clientURL.String(), m: m}
	t.Cleanup(tm.stop)
	tm.waitReady()
	// Until the learner publishes its client URLs the member list shows
	// none, and excluding it from a sync would prove nothing.
	waitUntil(t, "learner publishes its client URLs", func() bool {
		for _, mb := range must(c.MemberList(testCtx(t))).Members {
			if mb.IsLearner && slices.Contains(mb.ClientURLs, tm.url) {
				return true
			}
		}
		return false
	})
	return tm
}
