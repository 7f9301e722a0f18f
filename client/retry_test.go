package client

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/server/config"
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
	ms[2].stop()
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
	live := startMember(t).url
	dead := freeURL(t)
	c := newClient(t, dead.String(), live)
	for range 10 {
		must(c.Get(testCtx(t), "k"))
	}
}

// TestPutRetriedWhenNeverSent sends a Put to an endpoint that is down: the
// dial fails, so the Put provably never left the client and is retried
// until the member comes up.
func TestPutRetriedWhenNeverSent(t *testing.T) {
	clientURL, peerURL := freeURL(t), freeURL(t)
	c, err := New(Config{Endpoints: []string{clientURL.String()}, MaxRetries: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tm := &testMember{t: t, cfg: memberConfig(t, clientURL, peerURL), url: clientURL.String()}
	t.Cleanup(tm.stop)
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
	tm.start()
	tm.waitReady()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r := must(c.Get(testCtx(t), "k")); r.Count != 1 || r.Kvs[0].Version != 1 {
		t.Errorf("after retried put: %v", r.Kvs)
	}
}

func memberConfig(t *testing.T, clientURL, peerURL url.URL) *config.Config {
	cfg := config.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.TickMs, cfg.ElectionMs = 10, 100
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.Name + "=" + peerURL.String()
	return cfg
}

// flakyKV answers every call with Unavailable from the server side, as a
// member does when a proposal times out.
type flakyKV struct {
	pb.UnimplementedKVServer
	ranges, puts, txns atomic.Int32
}

func (f *flakyKV) Range(context.Context, *pb.RangeRequest) (*pb.RangeResponse, error) {
	f.ranges.Add(1)
	return nil, rpctypes.ErrGRPCTimeout
}

func (f *flakyKV) Put(context.Context, *pb.PutRequest) (*pb.PutResponse, error) {
	f.puts.Add(1)
	return nil, rpctypes.ErrGRPCTimeout
}

func (f *flakyKV) Txn(context.Context, *pb.TxnRequest) (*pb.TxnResponse, error) {
	f.txns.Add(1)
	return nil, rpctypes.ErrGRPCTimeout
}

// TestMutationNotRetriedAfterServerUnavailable: an Unavailable that the
// server sent may follow an applied write, so a Put (and a writing Txn)
// is sent once, while a Range (and a read-only Txn) is retried.
func TestMutationNotRetriedAfterServerUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	kv := &flakyKV{}
	pb.RegisterKVServer(srv, kv)
	go srv.Serve(l)
	defer srv.Stop()
	const retries = 3
	c, err := New(Config{Endpoints: []string{l.Addr().String()}, MaxRetries: retries, BackoffWaitBetween: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testCtx(t)
	if _, err := c.Put(ctx, "k", "v"); !errors.Is(err, rpctypes.ErrTimeout) {
		t.Errorf("put: %v, want ErrTimeout", err)
	}
	if _, err := c.Get(ctx, "k"); !errors.Is(err, rpctypes.ErrTimeout) {
		t.Errorf("get: %v, want ErrTimeout", err)
	}
	if _, err := c.Txn(ctx).Then(OpPut("k", "v")).Commit(); !errors.Is(err, rpctypes.ErrTimeout) {
		t.Errorf("txn: %v, want ErrTimeout", err)
	}
	c.Txn(ctx).Then(OpGet("k")).Commit()
	if p, r, tx := kv.puts.Load(), kv.ranges.Load(), kv.txns.Load(); p != 1 || r != retries+1 || tx != 1+retries+1 {
		t.Errorf("calls: %d puts, %d ranges, %d txns; want 1, %d, %d", p, r, tx, retries+1, retries+2)
	}
}

func TestNeverSent(t *testing.T) {
	for msg, want := range map[string]bool{
		`connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`: true,
		"there is no connection available": true,
		"transport is closing":             false,
		"error reading from server: EOF":   false,
		"etcdserver: request timed out":    false,
		"etcdserver: leader changed":       false,
	} {
		if got := neverSent(status.Error(codes.Unavailable, msg)); got != want {
			t.Errorf("neverSent(%q) = %v, want %v", msg, got, want)
		}
	}
	if neverSent(status.Error(codes.Internal, "connection refused")) {
		t.Error("a non-Unavailable error counts as never sent")
	}
}

func TestRetriesAreBounded(t *testing.T) {
	dead := freeURL(t)
	c, err := New(Config{Endpoints: []string{dead.String()}, MaxRetries: 2, BackoffWaitBetween: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Get(context.Background(), "k") // no deadline: must still end
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("get from a dead endpoint: %v", err)
	}
}

func TestDialTimeout(t *testing.T) {
	dead := freeURL(t)
	start := time.Now()
	_, err := New(Config{Endpoints: []string{dead.String()}, DialTimeout: 200 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("New: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("New took %v", d)
	}
	if _, err := New(Config{}); !errors.Is(err, ErrNoEndpoints) {
		t.Errorf("New without endpoints: %v", err)
	}
}

func TestBackoffGrowsToMax(t *testing.T) {
	c := &Client{cfg: Config{BackoffWaitBetween: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond}}
	for attempt, want := range []time.Duration{10, 20, 40, 80, 100, 100} {
		want *= time.Millisecond
		if d := c.backoff(attempt); d < want*9/10 || d > want*11/10 {
			t.Errorf("backoff(%d) = %v, want %v ±10%%", attempt, d, want)
		}
	}
}
