package concurrency_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/client/concurrency"
	"github.com/cairnkv/cairn/tests/harness"
)

func TestMutexKeyLayout(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t)
	s := newSession(t, c)
	m := concurrency.NewMutex(s, "layout")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("layout/%x", int64(s.Lease())); m.Key() != want {
		t.Fatalf("key %q, want %q", m.Key(), want)
	}
	resp, err := c.Get(ctx, m.Key())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].Lease != int64(s.Lease()) || len(resp.Kvs[0].Value) != 0 {
		t.Fatalf("lock key %v, want an empty value on the session's lease", resp.Kvs)
	}
	if m.Header() == nil || m.Header().Revision != resp.Kvs[0].CreateRevision {
		t.Fatalf("header %v, want the revision that created the key", m.Header())
	}
}

func TestMutexTryLock(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t)
	m1 := concurrency.NewMutex(newSession(t, c), "try")
	m2 := concurrency.NewMutex(newSession(t, c), "try")
	if err := m1.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m2.TryLock(ctx); !errors.Is(err, concurrency.ErrLocked) {
		t.Fatalf("TryLock of a held lock: %v, want ErrLocked", err)
	}
	if resp, err := c.Get(ctx, "try/", client.WithPrefix(), client.WithCountOnly()); err != nil || resp.Count != 1 {
		t.Fatalf("a refused TryLock must leave no key: count %v, err %v", resp.GetCount(), err)
	}
	if err := m1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m2.TryLock(ctx); err != nil {
		t.Fatalf("TryLock of a free lock: %v", err)
	}
}

func TestMutexUnlockTwice(t *testing.T) {
	ctx := testCtx(t)
	m := concurrency.NewMutex(newSession(t, newClient(t)), "twice")
	if err := m.Unlock(ctx); !errors.Is(err, concurrency.ErrLockReleased) {
		t.Fatalf("Unlock before Lock: %v, want ErrLockReleased", err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); !errors.Is(err, concurrency.ErrLockReleased) {
		t.Fatalf("second Unlock: %v, want ErrLockReleased", err)
	}
}

func TestMutexSameSessionReentersQueue(t *testing.T) {
	ctx := testCtx(t)
	s := newSession(t, newClient(t))
	m1, m2 := concurrency.NewMutex(s, "same"), concurrency.NewMutex(s, "same")
	if err := m1.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// Same session, same key: the lock is already this session's.
	if err := m2.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if m1.Key() != m2.Key() {
		t.Fatalf("keys %q and %q, want the session's one key", m1.Key(), m2.Key())
	}
}

// lockAsync starts m.Lock and returns the channel of its result.
func lockAsync(ctx context.Context, m *concurrency.Mutex) <-chan error {
	done := make(chan error, 1)
	go func() { done <- m.Lock(ctx) }()
	return done
}

func TestMutexFairQueue(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t)
	m1 := concurrency.NewMutex(newSession(t, c), "fair")
	s2, s3 := newSession(t, c), newSession(t, c)
	m2 := concurrency.NewMutex(s2, "fair")
	m3 := concurrency.NewMutex(s3, "fair")
	if err := m1.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	done2 := lockAsync(ctx, m2)
	harness.WaitKey(t, ctx, c, fmt.Sprintf("fair/%x", int64(s2.Lease())))
	done3 := lockAsync(ctx, m3)
	harness.WaitKey(t, ctx, c, fmt.Sprintf("fair/%x", int64(s3.Lease())))

	if err := m1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done2; err != nil {
		t.Fatalf("second in line: %v", err)
	}
	select {
	case err := <-done3:
		t.Fatalf("third in line got the lock (%v) while the second holds it", err)
	default:
	}
	assertOwner(t, ctx, c, m2)
	if err := m2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done3; err != nil {
		t.Fatalf("third in line: %v", err)
	}
	assertOwner(t, ctx, c, m3)
}

// assertOwner checks with IsOwner that m holds the lock.
func assertOwner(t *testing.T, ctx context.Context, c *client.Client, m *concurrency.Mutex) {
	t.Helper()
	resp, err := c.Txn(ctx).If(m.IsOwner()).Commit()
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Succeeded {
		t.Fatalf("%s does not own the lock", m.Key())
	}
}

func TestMutexLockCanceledLeavesQueue(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t)
	holder := concurrency.NewMutex(newSession(t, c), "cancel")
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	cancelWhileWaiting(t, ctx, c, "cancel", "Lock", func(ctx context.Context, s *concurrency.Session) <-chan error {
		return lockAsync(ctx, concurrency.NewMutex(s, "cancel"))
	})
}

func TestMutexSessionExpiredWhileWaiting(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t)
	holder := concurrency.NewMutex(newSession(t, c), "expired")
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	ws := newSession(t, c)
	waiter := concurrency.NewMutex(ws, "expired")
	done := lockAsync(ctx, waiter)
	harness.WaitKey(t, ctx, c, fmt.Sprintf("expired/%x", int64(ws.Lease())))
	if _, err := c.Revoke(ctx, ws.Lease()); err != nil {
		t.Fatal(err)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, concurrency.ErrSessionExpired) {
		t.Fatalf("Lock after the waiter's lease ended: %v, want ErrSessionExpired", err)
	}
}

func TestLocker(t *testing.T) {
	c := newClient(t)
	l := concurrency.NewLocker(newSession(t, c), "locker")
	l.Lock()
	l.Unlock()
}
