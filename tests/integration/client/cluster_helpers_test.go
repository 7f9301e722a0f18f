package client_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/pkg/proxy"
	"github.com/cairnkv/cairn/tests/harness"
)

// startIsolatable starts n members whose peer traffic runs through one
// pkg/proxy per member, and returns the cut that can isolate any of them
// from the others while its clients still reach it.
func startIsolatable(t *testing.T, n int) ([]*harness.Member, *harness.PeerCut) {
	t.Helper()
	proxies := make([]*proxy.Proxy, n)
	ms := startClusterVia(t, n, func(i int, listen string) string {
		p, err := proxy.New(proxy.Config{Listen: "127.0.0.1:0", Target: strings.TrimPrefix(listen, "http://")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		proxies[i] = p
		return "http://" + p.Addr()
	})
	cut := harness.NewPeerCut(proxies)
	c := newClient(t, urls(ms)...)
	for i, m := range ms {
		cut.SetID(i, must(c.Status(testCtx(t), m.Endpoint())).Header.MemberId)
	}
	return ms, cut
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
func memberAt(ms []*harness.Member, addr string) int {
	for i, m := range ms {
		if strings.TrimPrefix(m.Endpoint(), "http://") == addr {
			return i
		}
	}
	return -1
}

// addLearner adds a learner to the cluster of ms through c and starts it;
// it is stopped when the test ends.
func addLearner(t *testing.T, c *client.Client, ms []*harness.Member) *harness.Member {
	t.Helper()
	peerURL := harness.FreeURL(t)
	// As etcd, --strict-reconfig-check refuses any member add ("unhealthy
	// cluster") until every voter has been connected for 5 s.
	waitUntil(t, "learner added", func() bool {
		_, err := c.MemberAddAsLearner(testCtx(t), []string{peerURL})
		if err != nil && !errors.Is(err, rpctypes.ErrUnhealthy) {
			t.Fatalf("add learner: %v", err)
		}
		return err == nil
	})
	learner := harness.StartMember(t, cairnBin, harness.Flags{
		Name: "learner", PeerURL: peerURL, State: "existing",
		InitialCluster: ms[0].Flags.InitialCluster + ",learner=" + peerURL,
		Extra:          raftTimings,
	})
	// Until the learner publishes its client URLs the member list shows
	// none, and excluding it from a sync would prove nothing.
	waitUntil(t, "learner publishes its client URLs", func() bool {
		for _, mb := range must(c.MemberList(testCtx(t))).Members {
			if mb.IsLearner && slices.Contains(mb.ClientURLs, learner.Endpoint()) {
				return true
			}
		}
		return false
	})
	return learner
}
