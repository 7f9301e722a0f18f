package concurrency_test

import (
	"context"
	"testing"

	"github.com/cairnkv/cairn/client/concurrency"
)

// etcdSessionTTL is the TTL, in seconds, of a session made without WithTTL:
// etcd's, which applications written for etcd rely on.
const etcdSessionTTL = 60

func TestSessionTTL(t *testing.T) {
	c := newClient(t)
	for _, tc := range []struct {
		name string
		opts []concurrency.SessionOption
		want int64
	}{
		{"default", nil, etcdSessionTTL},
		{"WithTTL", []concurrency.SessionOption{concurrency.WithTTL(7)}, 7},
		{"WithTTL(0) keeps the default", []concurrency.SessionOption{concurrency.WithTTL(0)}, etcdSessionTTL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t, c, tc.opts...)
			resp, err := c.TimeToLive(testCtx(t), s.Lease())
			if err != nil {
				t.Fatal(err)
			}
			if resp.GrantedTTL != tc.want {
				t.Fatalf("granted TTL %d, want %d", resp.GrantedTTL, tc.want)
			}
		})
	}
}

func TestSessionCloseRevokes(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t)
	s, err := concurrency.NewSession(c, concurrency.WithTTL(30))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	if s.Ctx().Err() == nil {
		t.Fatal("session context alive after Close")
	}
	resp, err := c.TimeToLive(ctx, s.Lease())
	if err != nil {
		t.Fatal(err)
	}
	if resp.TTL != -1 {
		t.Fatalf("lease TTL %d after Close, want -1 (revoked)", resp.TTL)
	}
}

func TestSessionOrphanKeepsLease(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t)
	s := newSession(t, c, concurrency.WithTTL(30))
	s.Orphan()
	<-s.Done()
	resp, err := c.TimeToLive(ctx, s.Lease())
	if err != nil {
		t.Fatal(err)
	}
	if resp.TTL <= 0 {
		t.Fatalf("lease TTL %d after Orphan, want it alive", resp.TTL)
	}
}

func TestSessionWithLease(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t)
	grant, err := c.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, c, concurrency.WithLease(grant.ID))
	if s.Lease() != grant.ID {
		t.Fatalf("session lease %x, want %x", s.Lease(), grant.ID)
	}
}

func TestSessionEndsWithLease(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t)
	// A short TTL makes the keep-alive ask (and learn) every second.
	s := newSession(t, c, concurrency.WithTTL(3))
	if _, err := c.Revoke(ctx, s.Lease()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatal("session still alive after its lease was revoked")
	}
}

func TestSessionContextCanceled(t *testing.T) {
	c := newClient(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	if _, err := concurrency.NewSession(c, concurrency.WithContext(ctx)); err == nil {
		t.Fatal("NewSession with a canceled context succeeded")
	}
}
