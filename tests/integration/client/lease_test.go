package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/cairnkv/cairn/client"
)

func TestLeaseKeepAliveKeepsLeaseAlive(t *testing.T) {
	c, ctx := newMemberClient(t)
	l := must(c.Grant(ctx, 1))
	must(c.Put(ctx, "k", "v", client.WithLease(l.ID)))
	kctx, stop := context.WithCancel(ctx)
	ch := must(c.KeepAlive(kctx, l.ID))
	time.Sleep(3 * time.Second) // three TTLs
	if r := must(c.Get(ctx, "k")); r.Count != 1 {
		t.Fatal("the key expired although its lease was kept alive")
	}
	ka := <-ch
	if ka.ID != l.ID || ka.TTL != 1 {
		t.Errorf("keep-alive response %+v", ka)
	}
	stop()
	for range ch {
	}
	ttl := must(c.TimeToLive(ctx, l.ID, client.WithAttachedKeys()))
	if ttl.GrantedTTL != 1 || len(ttl.Keys) != 1 || string(ttl.Keys[0]) != "k" {
		t.Errorf("time to live %+v", ttl)
	}
}

func TestLeaseAPI(t *testing.T) {
	c, ctx := newMemberClient(t)
	l := must(c.Grant(ctx, 60))
	if l.TTL != 60 || l.ID == client.NoLease {
		t.Fatalf("grant %+v", l)
	}
	ls := must(c.Leases(ctx))
	if len(ls.Leases) != 1 || ls.Leases[0].ID != l.ID {
		t.Errorf("leases %+v", ls.Leases)
	}
	ka := must(c.KeepAliveOnce(ctx, l.ID))
	if ka.ID != l.ID || ka.TTL != 60 {
		t.Errorf("keep alive once %+v", ka)
	}
	must(c.Revoke(ctx, l.ID))
	if _, err := c.KeepAliveOnce(ctx, l.ID); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Errorf("keep alive of a revoked lease: %v", err)
	}
	if _, err := c.Revoke(ctx, l.ID); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Errorf("revoke twice: %v", err)
	}
	if ttl := must(c.TimeToLive(ctx, l.ID)); ttl.TTL != -1 {
		t.Errorf("time to live of a revoked lease: %d", ttl.TTL)
	}
}

func TestKeepAliveChannelClosesOnRevoke(t *testing.T) {
	c, ctx := newMemberClient(t)
	l := must(c.Grant(ctx, 3))
	ch := must(c.KeepAlive(ctx, l.ID))
	<-ch
	must(c.Revoke(ctx, l.ID))
	timeout := time.After(10 * time.Second) // the next renewal is due after TTL/3
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("keep-alive channel still open after revoke")
		}
	}
}

func TestKeepAliveChannelClosesOnClientClose(t *testing.T) {
	c := newClient(t, startMember(t).Endpoint())
	l := must(c.Grant(testCtx(t), 60))
	ch := must(c.KeepAlive(context.Background(), l.ID))
	<-ch
	c.Close()
	for range ch {
	}
	if _, err := c.KeepAlive(context.Background(), l.ID); !errors.Is(err, client.ErrClientClosed) {
		t.Errorf("keep alive after close: %v", err)
	}
}
