package client

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/pkg/freeport"
)

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
	dead := freeport.URL(t)
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
	dead := freeport.URL(t)
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
