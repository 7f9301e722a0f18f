package recipes

import (
	"errors"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	etcdconc "go.etcd.io/etcd/client/v3/concurrency"

	"github.com/cairnkv/cairn/api/v3electionpb"
	"github.com/cairnkv/cairn/api/v3lockpb"
	"github.com/cairnkv/cairn/client/concurrency"
	"github.com/cairnkv/cairn/tests/harness"
)

func etcdSession(t *testing.T, c *clientv3.Client) *etcdconc.Session {
	t.Helper()
	s, err := etcdconc.NewSession(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func cairnSession(t *testing.T, c clients) *concurrency.Session {
	t.Helper()
	s, err := concurrency.NewSession(c.cairn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestMutexInterop queues etcd's and cairn's mutexes on one name: each
// sees the other's lock and the queue is served in order across both.
func TestMutexInterop(t *testing.T) {
	ctx := testCtx(t)
	c := connect(t, startCairn(t))
	etcd1 := etcdconc.NewMutex(etcdSession(t, c.etcd), "shared")
	cairnSess := cairnSession(t, c)
	cairn2 := concurrency.NewMutex(cairnSess, "shared")
	etcd3Sess := etcdSession(t, c.etcd)
	etcd3 := etcdconc.NewMutex(etcd3Sess, "shared")

	if err := etcd1.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cairn2.TryLock(ctx); !errors.Is(err, concurrency.ErrLocked) {
		t.Fatalf("cairn TryLock while etcd's mutex holds: %v, want ErrLocked", err)
	}
	done2 := async(func() error { return cairn2.Lock(ctx) })
	harness.WaitKey(t, ctx, c.cairn, fmt.Sprintf("shared/%x", int64(cairnSess.Lease())))
	done3 := async(func() error { return etcd3.Lock(ctx) })
	harness.WaitKey(t, ctx, c.cairn, fmt.Sprintf("shared/%x", int64(etcd3Sess.Lease())))

	if err := etcd1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done2; err != nil {
		t.Fatalf("cairn's mutex, second in line: %v", err)
	}
	pending(t, "etcd's mutex, third in line,", done3)
	if err := etcdconc.NewMutex(etcdSession(t, c.etcd), "shared").TryLock(ctx); !errors.Is(err, etcdconc.ErrLocked) {
		t.Fatalf("etcd TryLock while cairn's mutex holds: %v, want ErrLocked", err)
	}
	if err := cairn2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done3; err != nil {
		t.Fatalf("etcd's mutex, third in line: %v", err)
	}
}

// TestElectionInterop runs one election with a cairn and an etcd
// candidate; each side reads and observes the other's leadership.
func TestElectionInterop(t *testing.T) {
	ctx := testCtx(t)
	c := connect(t, startCairn(t))
	cairnE := concurrency.NewElection(cairnSession(t, c), "vote")
	etcdSess := etcdSession(t, c.etcd)
	etcdE := etcdconc.NewElection(etcdSess, "vote")
	observed := etcdconc.NewElection(etcdSession(t, c.etcd), "vote").Observe(ctx)

	if err := cairnE.Campaign(ctx, "cairn"); err != nil {
		t.Fatal(err)
	}
	expectObserved(t, observed, "cairn")
	done := async(func() error { return etcdE.Campaign(ctx, "etcd") })
	harness.WaitKey(t, ctx, c.cairn, fmt.Sprintf("vote/%x", int64(etcdSess.Lease())))
	if err := cairnE.Proclaim(ctx, "cairn-2"); err != nil {
		t.Fatal(err)
	}
	expectObserved(t, observed, "cairn-2")
	leader, err := etcdE.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(leader.Kvs[0].Value) != "cairn-2" {
		t.Fatalf("etcd's Leader reads %q, want cairn-2", leader.Kvs[0].Value)
	}
	pending(t, "etcd's campaign", done)
	if err := cairnE.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	expectObserved(t, observed, "etcd")
	resp, err := cairnE.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Kvs[0].Value) != "etcd" {
		t.Fatalf("cairn's Leader reads %q, want etcd", resp.Kvs[0].Value)
	}
}

func expectObserved(t *testing.T, observed <-chan *clientv3.GetResponse, want string) {
	t.Helper()
	resp, ok := <-observed
	if !ok {
		t.Fatalf("etcd's Observe closed, want %q", want)
	}
	if got := string(resp.Kvs[0].Value); got != want {
		t.Fatalf("etcd's Observe saw %q, want %q", got, want)
	}
}

// TestServicesInterop takes a lock and a leadership through cairn's Lock
// and Election services (cairn's generated stubs) and checks that etcd's
// recipes see them.
func TestServicesInterop(t *testing.T) {
	ctx := testCtx(t)
	c := connect(t, startCairn(t))
	lease, err := c.etcd.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	locks := v3lockpb.NewLockClient(c.grpc)
	held, err := locks.Lock(ctx, &v3lockpb.LockRequest{Name: []byte("svc-lock"), Lease: int64(lease.ID)})
	if err != nil {
		t.Fatal(err)
	}
	etcdMutex := etcdconc.NewMutex(etcdSession(t, c.etcd), "svc-lock")
	if err := etcdMutex.TryLock(ctx); !errors.Is(err, etcdconc.ErrLocked) {
		t.Fatalf("etcd TryLock while the Lock service holds: %v, want ErrLocked", err)
	}
	if _, err := locks.Unlock(ctx, &v3lockpb.UnlockRequest{Key: held.Key}); err != nil {
		t.Fatal(err)
	}
	if err := etcdMutex.TryLock(ctx); err != nil {
		t.Fatalf("etcd TryLock after Unlock: %v", err)
	}

	elections := v3electionpb.NewElectionClient(c.grpc)
	camp, err := elections.Campaign(ctx, &v3electionpb.CampaignRequest{Name: []byte("svc-vote"), Lease: int64(lease.ID), Value: []byte("svc")})
	if err != nil {
		t.Fatal(err)
	}
	leader, err := etcdconc.NewElection(etcdSession(t, c.etcd), "svc-vote").Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(leader.Kvs[0].Key) != string(camp.Leader.Key) || string(leader.Kvs[0].Value) != "svc" {
		t.Fatalf("etcd's Leader reads %s=%s, want %s=svc", leader.Kvs[0].Key, leader.Kvs[0].Value, camp.Leader.Key)
	}
}
