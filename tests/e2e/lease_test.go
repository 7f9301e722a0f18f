package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/tests/harness"
)

// leaseExpiryWait bounds waiting for a lease of a few seconds to expire
// and its keys to be deleted; it is a give-up bound, not an expectation.
const leaseExpiryWait = 15 * time.Second

// leaseKeys renders a TimeToLive response's attached keys, sorted (etcd
// lists them in no particular order).
func leaseKeys(resp *clientv3.LeaseTimeToLiveResponse) []string {
	var ks []string
	for _, k := range resp.Keys {
		ks = append(ks, string(k))
	}
	slices.Sort(ks)
	return ks
}

// leaseIDs returns the IDs LeaseLeases lists on cli's member.
func leaseIDs(t testing.TB, cli *clientv3.Client) []clientv3.LeaseID {
	t.Helper()
	resp, err := cli.Leases(ctx(t))
	must(t, err)
	var ids []clientv3.LeaseID
	for _, l := range resp.Leases {
		ids = append(ids, l.ID)
	}
	return ids
}

// waitKeysGone waits until none of keys reads on cli (linearizable).
func waitKeysGone(t testing.TB, cli *clientv3.Client, keys ...string) {
	t.Helper()
	left := 0
	if !harness.Poll(leaseExpiryWait, 100*time.Millisecond, func() bool {
		left = 0
		for _, k := range keys {
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			resp, err := cli.Get(cctx, k)
			cancel()
			if err != nil || len(resp.Kvs) > 0 {
				left++
			}
		}
		return left == 0
	}) {
		t.Fatalf("%d of the keys %q still present (or unreadable) %v later", left, keys, leaseExpiryWait)
	}
}

// TestLeaseBasics grants a lease, attaches keys, inspects it with
// TimeToLive and Leases, and revokes it: the revoke deletes every attached
// key in exactly one revision.
func TestLeaseBasics(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)

	g, err := cli.Grant(ctx(t), 60)
	must(t, err)
	if g.ID == 0 || g.TTL != 60 || g.Error != "" {
		t.Fatalf("Grant(60) = ID %x TTL %d error %q, want a non-zero ID and TTL 60", g.ID, g.TTL, g.Error)
	}
	if g.ID < 0 {
		t.Errorf("granted ID %d is negative; etcd chooses positive IDs", g.ID)
	}
	other, err := cli.Grant(ctx(t), 120)
	must(t, err)
	if other.ID == g.ID {
		t.Fatalf("two grants returned the same ID %x", g.ID)
	}

	mustPut(t, cli, "plain", "p")
	for _, k := range []string{"k1", "k2", "k3"} {
		_, err := cli.Put(ctx(t), k, "v-"+k, clientv3.WithLease(g.ID))
		must(t, err)
	}
	_, err = cli.Put(ctx(t), "o1", "x", clientv3.WithLease(other.ID))
	must(t, err)
	// Overwriting k3 without a lease detaches it.
	mustPut(t, cli, "k3", "detached")

	get, err := cli.Get(ctx(t), "k1")
	must(t, err)
	if len(get.Kvs) != 1 || get.Kvs[0].Lease != int64(g.ID) {
		t.Fatalf("k1 = %v, want it attached to lease %x", get.Kvs, g.ID)
	}

	ttl, err := cli.TimeToLive(ctx(t), g.ID, clientv3.WithAttachedKeys())
	must(t, err)
	if ttl.ID != g.ID || ttl.GrantedTTL != 60 {
		t.Errorf("TimeToLive = ID %x granted %d, want ID %x granted 60", ttl.ID, ttl.GrantedTTL, g.ID)
	}
	// etcd reports the whole seconds left, rounded down: a lease granted a
	// moment ago has TTL-1 left.
	if ttl.TTL <= 0 || ttl.TTL >= 60 {
		t.Errorf("TimeToLive remaining TTL = %d, want 0 < TTL < 60 right after the grant", ttl.TTL)
	}
	if got := leaseKeys(ttl); !slices.Equal(got, []string{"k1", "k2"}) {
		t.Errorf("attached keys = %q, want [k1 k2] (k3 was overwritten without the lease)", got)
	}
	noKeys, err := cli.TimeToLive(ctx(t), g.ID)
	must(t, err)
	if len(noKeys.Keys) != 0 {
		t.Errorf("TimeToLive without keys listed keys %q", noKeys.Keys)
	}

	ids := leaseIDs(t, cli)
	if !slices.Contains(ids, g.ID) || !slices.Contains(ids, other.ID) || len(ids) != 2 {
		t.Errorf("Leases = %x, want exactly %x and %x", ids, g.ID, other.ID)
	}

	before := currentRev(t, cli)
	rv, err := cli.Revoke(ctx(t), g.ID)
	must(t, err)
	if rv.Header.Revision != before+1 {
		t.Errorf("Revoke answered revision %d, want %d (both keys deleted in one revision)", rv.Header.Revision, before+1)
	}
	if r := currentRev(t, cli); r != before+1 {
		t.Errorf("revision after revoking a lease with two keys is %d, want %d", r, before+1)
	}
	all, err := cli.Get(ctx(t), "", clientv3.WithPrefix())
	must(t, err)
	if got := kvPairs(all.Kvs); got != "k3=detached,o1=x,plain=p" {
		t.Errorf("keys after revoke = %q, want k3=detached,o1=x,plain=p", got)
	}
	// The keys were there just before the revoke's revision.
	prev, err := cli.Get(ctx(t), "k", clientv3.WithPrefix(), clientv3.WithRev(before))
	must(t, err)
	if got := kvPairs(prev.Kvs); got != "k1=v-k1,k2=v-k2,k3=detached" {
		t.Errorf("keys at revision %d = %q, want k1=v-k1,k2=v-k2,k3=detached", before, got)
	}
	gone, err := cli.TimeToLive(ctx(t), g.ID, clientv3.WithAttachedKeys())
	must(t, err)
	if gone.TTL != -1 || gone.ID != g.ID || gone.GrantedTTL != 0 || len(gone.Keys) != 0 {
		t.Errorf("TimeToLive of a revoked lease = ID %x TTL %d granted %d keys %q, want ID %x TTL -1 granted 0 no keys",
			gone.ID, gone.TTL, gone.GrantedTTL, gone.Keys, g.ID)
	}
	if ids := leaseIDs(t, cli); !slices.Equal(ids, []clientv3.LeaseID{other.ID}) {
		t.Errorf("Leases after revoke = %x, want [%x]", ids, other.ID)
	}
	_, err = cli.Revoke(ctx(t), g.ID)
	wantErr(t, err, rpctypes.ErrLeaseNotFound)
	_, err = cli.Put(ctx(t), "k9", "v", clientv3.WithLease(g.ID))
	wantErr(t, err, rpctypes.ErrLeaseNotFound)

	// A lease without keys revokes without a new revision.
	before = currentRev(t, cli)
	empty, err := cli.Grant(ctx(t), 30)
	must(t, err)
	rv, err = cli.Revoke(ctx(t), empty.ID)
	must(t, err)
	if rv.Header.Revision != before || currentRev(t, cli) != before {
		t.Errorf("revoking a lease without keys: revision %d (answered %d), want %d unchanged", currentRev(t, cli), rv.Header.Revision, before)
	}

	// Unknown leases.
	const unknown = clientv3.LeaseID(0x7e57)
	_, err = cli.Revoke(ctx(t), unknown)
	wantErr(t, err, rpctypes.ErrLeaseNotFound)
	u, err := cli.TimeToLive(ctx(t), unknown, clientv3.WithAttachedKeys())
	must(t, err)
	if u.TTL != -1 || u.ID != unknown || u.GrantedTTL != 0 || len(u.Keys) != 0 {
		t.Errorf("TimeToLive of an unknown lease = ID %x TTL %d granted %d keys %q, want ID %x TTL -1 granted 0",
			u.ID, u.TTL, u.GrantedTTL, u.Keys, unknown)
	}
	_, err = cli.Put(ctx(t), "k9", "v", clientv3.WithLease(unknown))
	wantErr(t, err, rpctypes.ErrLeaseNotFound)
	// The client reports a keepalive answered with TTL 0 as not found.
	_, err = cli.KeepAliveOnce(ctx(t), unknown)
	wantErr(t, err, rpctypes.ErrLeaseNotFound)

	// On the wire: the server echoes the ID with TTL 0 and no error.
	stream, err := pb.NewLeaseClient(cli.ActiveConnection()).LeaseKeepAlive(ctx(t))
	must(t, err)
	must(t, stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(unknown)}))
	ka, err := stream.Recv()
	must(t, err)
	if ka.ID != int64(unknown) || ka.TTL != 0 {
		t.Errorf("LeaseKeepAlive of an unknown lease = ID %x TTL %d, want ID %x TTL 0", ka.ID, ka.TTL, unknown)
	}
	must(t, stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(other.ID)}))
	ka, err = stream.Recv()
	must(t, err)
	if ka.ID != int64(other.ID) || ka.TTL != 120 {
		t.Errorf("LeaseKeepAlive of a live lease = ID %x TTL %d, want ID %x TTL 120", ka.ID, ka.TTL, other.ID)
	}
	must(t, stream.CloseSend())
}

// TestLeaseGrantTTL checks how LeaseGrant treats the requested TTL: below
// the minimum (2 s with the default timing) it is raised to it, above
// 9,000,000,000 s it is refused.
func TestLeaseGrantTTL(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	for _, tt := range []struct {
		ttl, want int64
	}{
		{-100, 2}, {-1, 2}, {0, 2}, {1, 2}, {2, 2}, {3, 3}, {7200, 7200}, {9_000_000_000, 9_000_000_000},
	} {
		t.Run(fmt.Sprint(tt.ttl), func(t *testing.T) {
			g, err := cli.Grant(ctx(t), tt.ttl)
			must(t, err)
			if g.TTL != tt.want {
				t.Errorf("Grant(%d) TTL = %d, want %d", tt.ttl, g.TTL, tt.want)
			}
			ttl, err := cli.TimeToLive(ctx(t), g.ID)
			must(t, err)
			if ttl.GrantedTTL != tt.want {
				t.Errorf("Grant(%d): TimeToLive granted TTL = %d, want %d", tt.ttl, ttl.GrantedTTL, tt.want)
			}
			ka, err := cli.KeepAliveOnce(ctx(t), g.ID)
			must(t, err)
			if ka.TTL != tt.want {
				t.Errorf("Grant(%d): KeepAliveOnce TTL = %d, want %d", tt.ttl, ka.TTL, tt.want)
			}
		})
	}
	for _, ttl := range []int64{9_000_000_001, 1 << 62} {
		_, err := cli.Grant(ctx(t), ttl)
		wantErr(t, err, rpctypes.ErrLeaseTTLTooLarge)
	}
}

// TestLeaseExplicitID grants leases with IDs chosen by the client.
func TestLeaseExplicitID(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	lc := pb.NewLeaseClient(cli.ActiveConnection())

	g, err := lc.LeaseGrant(ctx(t), &pb.LeaseGrantRequest{ID: 0x1234, TTL: 60})
	must(t, err)
	if g.ID != 0x1234 || g.TTL != 60 || g.Error != "" {
		t.Fatalf("LeaseGrant(ID 0x1234) = ID %x TTL %d error %q", g.ID, g.TTL, g.Error)
	}
	if g.Header == nil || g.Header.Revision != 1 {
		t.Errorf("LeaseGrant header = %v, want revision 1 (a grant does not write a key)", g.Header)
	}
	_, err = lc.LeaseGrant(ctx(t), &pb.LeaseGrantRequest{ID: 0x1234, TTL: 30})
	wantErr(t, err, rpctypes.ErrLeaseExist)
	// The failed grant changed nothing.
	ttl, err := cli.TimeToLive(ctx(t), 0x1234)
	must(t, err)
	if ttl.GrantedTTL != 60 {
		t.Errorf("granted TTL after the duplicate grant = %d, want 60", ttl.GrantedTTL)
	}
	_, err = cli.Put(ctx(t), "x", "1", clientv3.WithLease(0x1234))
	must(t, err)

	// The largest ID works too; once revoked, an ID can be granted again.
	big, err := lc.LeaseGrant(ctx(t), &pb.LeaseGrantRequest{ID: 1<<63 - 1, TTL: 60})
	must(t, err)
	if big.ID != 1<<63-1 {
		t.Errorf("LeaseGrant(ID max int64) = ID %x", big.ID)
	}
	_, err = cli.Revoke(ctx(t), 0x1234)
	must(t, err)
	g, err = lc.LeaseGrant(ctx(t), &pb.LeaseGrantRequest{ID: 0x1234, TTL: 30})
	must(t, err)
	if g.ID != 0x1234 || g.TTL != 30 {
		t.Errorf("re-grant of a revoked ID = ID %x TTL %d, want 0x1234 TTL 30", g.ID, g.TTL)
	}
	if ids := leaseIDs(t, cli); !slices.Contains(ids, 0x1234) || !slices.Contains(ids, 1<<63-1) || len(ids) != 2 {
		t.Errorf("Leases = %x, want 1234 and 7fffffffffffffff", ids)
	}
}

// grantWithKeys grants a lease of ttl seconds and puts each key (value
// "v") attached to it: the setup of the expiry, keepalive and restart
// tests.
func grantWithKeys(t *testing.T, cli *clientv3.Client, ttl int64, keys ...string) *clientv3.LeaseGrantResponse {
	t.Helper()
	g, err := cli.Grant(ctx(t), ttl)
	must(t, err)
	for _, k := range keys {
		_, err := cli.Put(ctx(t), k, "v", clientv3.WithLease(g.ID))
		must(t, err)
	}
	return g
}

// TestLeaseExpiry lets a short lease run out without keepalives: its keys
// are deleted, in one revision, and the lease is gone.
func TestLeaseExpiry(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	g := grantWithKeys(t, cli, 2, "e1", "e2")
	mustPut(t, cli, "stay", "s")
	before := currentRev(t, cli)
	waitKeysGone(t, cli, "e1", "e2")
	if r := currentRev(t, cli); r != before+1 {
		t.Errorf("revision after the lease with two keys expired is %d, want %d", r, before+1)
	}
	ttl, err := cli.TimeToLive(ctx(t), g.ID)
	must(t, err)
	if ttl.TTL != -1 {
		t.Errorf("TimeToLive of the expired lease: TTL %d, want -1", ttl.TTL)
	}
	if ids := leaseIDs(t, cli); len(ids) != 0 {
		t.Errorf("Leases after expiry = %x, want none", ids)
	}
	_, err = cli.Revoke(ctx(t), g.ID)
	wantErr(t, err, rpctypes.ErrLeaseNotFound)
	get, err := cli.Get(ctx(t), "stay")
	must(t, err)
	if kvPairs(get.Kvs) != "stay=s" {
		t.Errorf("key without a lease = %q after expiry", kvPairs(get.Kvs))
	}
}

// keepAlive runs the client's KeepAlive for id until the returned stop is
// called. Before stop, the keepalive channel must not close (the client
// closes it when the lease is gone or it gave up); stop reports how many
// responses arrived.
func keepAlive(t *testing.T, cli *clientv3.Client, id clientv3.LeaseID, wantTTL int64) (stop func() int) {
	t.Helper()
	kctx, cancel := context.WithCancel(context.Background())
	ch, err := cli.KeepAlive(kctx, id)
	if err != nil {
		cancel()
		t.Fatalf("KeepAlive: %s", describeErr(err))
	}
	done := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case resp, ok := <-ch:
				if !ok {
					if kctx.Err() == nil {
						t.Errorf("keepalive channel for lease %x closed while keepalives were expected", id)
					}
					done <- n
					return
				}
				n++
				if resp.TTL != wantTTL {
					t.Errorf("keepalive response TTL %d, want %d", resp.TTL, wantTTL)
				}
			case <-kctx.Done():
				// Drain until the client closes the channel.
				for range ch {
				}
				done <- n
				return
			}
		}
	}()
	var n int
	stopped := false
	stop = func() int {
		if !stopped {
			stopped = true
			cancel()
			n = <-done
		}
		return n
	}
	t.Cleanup(func() { stop() })
	return stop
}

// holdKey reads key (serializable, so that a leader change does not fail
// the read) on cli every 100 ms for d and fails if it is ever missing.
func holdKey(t *testing.T, cli *clientv3.Client, key string, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		resp, err := cli.Get(ctx(t), key, clientv3.WithSerializable())
		must(t, err)
		if len(resp.Kvs) != 1 {
			t.Fatalf("%q vanished while its lease was kept alive (%v before the end of the %v window)", key, time.Until(end).Round(time.Millisecond), d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLeaseKeepAlive keeps a 2 s lease alive for well over twice its TTL,
// then stops and waits for it to expire.
func TestLeaseKeepAlive(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	g := grantWithKeys(t, cli, 2, "ka")
	stop := keepAlive(t, cli, g.ID, 2)
	holdKey(t, cli, "ka", 5*time.Second)
	ttl, err := cli.TimeToLive(ctx(t), g.ID, clientv3.WithAttachedKeys())
	must(t, err)
	if ttl.TTL <= 0 || ttl.GrantedTTL != 2 || !slices.Equal(leaseKeys(ttl), []string{"ka"}) {
		t.Fatalf("after 5 s of keepalives TimeToLive = TTL %d granted %d keys %q, want TTL > 0 granted 2 keys [ka]",
			ttl.TTL, ttl.GrantedTTL, leaseKeys(ttl))
	}
	if n := stop(); n < 2 {
		t.Errorf("%d keepalive responses in 5 s, want several", n)
	}
	waitKeysGone(t, cli, "ka")
	ka, err := cli.KeepAliveOnce(ctx(t), g.ID)
	if err == nil {
		t.Errorf("KeepAliveOnce of the expired lease answered TTL %d", ka.TTL)
	} else {
		wantErr(t, err, rpctypes.ErrLeaseNotFound)
	}
}

// TestLeaseSurvivesRestart restarts a member (gracefully, then by SIGKILL):
// the lease and its attached keys survive, and so does a revocation.
func TestLeaseSurvivesRestart(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	g := grantWithKeys(t, cli, 600, "r1", "r2")
	revoked := grantWithKeys(t, cli, 600, "gone")
	_, err := cli.Revoke(ctx(t), revoked.ID)
	must(t, err)
	_, err = pb.NewLeaseClient(cli.ActiveConnection()).LeaseGrant(ctx(t), &pb.LeaseGrantRequest{ID: 0xabc, TTL: 900})
	must(t, err)
	rev := currentRev(t, cli)

	check := func(how string) {
		t.Helper()
		cli := m.client(t)
		if r := currentRev(t, cli); r != rev {
			t.Errorf("after %s: revision %d, want %d", how, r, rev)
		}
		ttl, err := cli.TimeToLive(ctx(t), g.ID, clientv3.WithAttachedKeys())
		must(t, err)
		if ttl.GrantedTTL != 600 || ttl.TTL <= 0 || !slices.Equal(leaseKeys(ttl), []string{"r1", "r2"}) {
			t.Errorf("after %s: TimeToLive = TTL %d granted %d keys %q, want TTL > 0 granted 600 keys [r1 r2]",
				how, ttl.TTL, ttl.GrantedTTL, leaseKeys(ttl))
		}
		ttl, err = cli.TimeToLive(ctx(t), 0xabc)
		must(t, err)
		if ttl.GrantedTTL != 900 || ttl.TTL <= 0 {
			t.Errorf("after %s: TimeToLive(abc) = TTL %d granted %d, want TTL > 0 granted 900", how, ttl.TTL, ttl.GrantedTTL)
		}
		ttl, err = cli.TimeToLive(ctx(t), revoked.ID)
		must(t, err)
		if ttl.TTL != -1 {
			t.Errorf("after %s: the revoked lease has TTL %d, want -1", how, ttl.TTL)
		}
		ids := leaseIDs(t, cli)
		if len(ids) != 2 || !slices.Contains(ids, g.ID) || !slices.Contains(ids, 0xabc) {
			t.Errorf("after %s: Leases = %x, want %x and abc", how, ids, g.ID)
		}
		get, err := cli.Get(ctx(t), "", clientv3.WithPrefix())
		must(t, err)
		if kvPairs(get.Kvs) != "r1=v,r2=v" {
			t.Errorf("after %s: keys %q, want r1=v,r2=v", how, kvPairs(get.Kvs))
		}
		for _, kv := range get.Kvs {
			if kv.Lease != int64(g.ID) {
				t.Errorf("after %s: %s has lease %x, want %x", how, kv.Key, kv.Lease, g.ID)
			}
		}
	}

	if err := gracefulExit(m.stop()); err != nil {
		t.Fatalf("stop: %v", err)
	}
	m.restart()
	check("a graceful restart")
	m.kill()
	m.restart()
	check("a SIGKILL restart")

	// The attachment still works: revoking deletes both keys in one revision.
	cli = m.client(t)
	rv, err := cli.Revoke(ctx(t), g.ID)
	must(t, err)
	if rv.Header.Revision != rev+1 {
		t.Errorf("revoke after restarts answered revision %d, want %d", rv.Header.Revision, rev+1)
	}
	get, err := cli.Get(ctx(t), "r", clientv3.WithPrefix())
	must(t, err)
	if len(get.Kvs) != 0 {
		t.Errorf("keys left after revoking the restored lease: %q", kvPairs(get.Kvs))
	}
}

// TestLeaseCluster uses leases through followers of a 3-member cluster
// (grant, keepalive and TimeToLive are served by, or forwarded to, the
// leader), then kills the leader while keepalives continue through a
// follower: the new leader must not expire the lease early, and expires it
// once the keepalives stop.
func TestLeaseCluster(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})
	l := c.waitLeader(c.all()...)
	f1, f2 := c.except(l)[0], c.except(l)[1]

	g, err := c.clients[f1].Grant(ctx(t), 60)
	must(t, err)
	if g.TTL != 60 {
		t.Fatalf("Grant via follower m%d: TTL %d, want 60", f1, g.TTL)
	}
	_, err = c.clients[f2].Put(ctx(t), "cl", "v", clientv3.WithLease(g.ID))
	must(t, err)
	for i := range c.members {
		c.syncRead(t, i)
		ttl, err := c.clients[i].TimeToLive(ctx(t), g.ID, clientv3.WithAttachedKeys())
		must(t, err)
		if ttl.GrantedTTL != 60 || ttl.TTL <= 0 || ttl.TTL > 60 || !slices.Equal(leaseKeys(ttl), []string{"cl"}) {
			t.Errorf("TimeToLive via m%d (leader m%d) = TTL %d granted %d keys %q, want 0 < TTL <= 60, granted 60, keys [cl]",
				i, l, ttl.TTL, ttl.GrantedTTL, leaseKeys(ttl))
		}
		if ids := leaseIDs(t, c.clients[i]); !slices.Equal(ids, []clientv3.LeaseID{g.ID}) {
			t.Errorf("Leases via m%d = %x, want [%x]", i, ids, g.ID)
		}
	}
	for _, i := range []int{f1, f2} {
		ka, err := c.clients[i].KeepAliveOnce(ctx(t), g.ID)
		must(t, err)
		if ka.TTL != 60 || ka.ID != g.ID {
			t.Errorf("KeepAliveOnce via follower m%d = ID %x TTL %d, want ID %x TTL 60", i, ka.ID, ka.TTL, g.ID)
		}
		_, err = c.clients[i].KeepAliveOnce(ctx(t), 0x7e57)
		wantErr(t, err, rpctypes.ErrLeaseNotFound)
		u, err := c.clients[i].TimeToLive(ctx(t), 0x7e57)
		must(t, err)
		if u.TTL != -1 {
			t.Errorf("TimeToLive of an unknown lease via follower m%d: TTL %d, want -1", i, u.TTL)
		}
	}
	_, err = c.clients[f2].Revoke(ctx(t), g.ID)
	must(t, err)
	for i := range c.members {
		c.syncRead(t, i)
		get, err := c.clients[i].Get(ctx(t), "cl", clientv3.WithSerializable())
		must(t, err)
		if len(get.Kvs) != 0 {
			t.Errorf("m%d still has cl after the revoke through m%d", i, f2)
		}
	}

	// A short lease kept alive through follower f1 while the leader dies.
	const shortTTL = 3
	short, err := c.clients[f1].Grant(ctx(t), shortTTL)
	must(t, err)
	put, err := c.clients[f1].Put(ctx(t), "short", "v", clientv3.WithLease(short.ID))
	must(t, err)
	stop := keepAlive(t, c.clients[f1], short.ID, shortTTL)
	time.Sleep(time.Second)

	c.members[l].kill()
	nl := c.waitLeader(f1, f2)
	t.Logf("killed leader m%d; m%d leads now", l, nl)
	// Keep alive for three TTLs under the new leader; the key must stay,
	// unchanged, on both survivors.
	holdKey(t, c.clients[f2], "short", 3*shortTTL*time.Second)
	for _, i := range []int{f1, f2} {
		get, err := c.clients[i].Get(ctx(t), "short")
		must(t, err)
		if len(get.Kvs) != 1 || get.Kvs[0].ModRevision != put.Header.Revision {
			t.Fatalf("m%d: short = %v, want the put at revision %d", i, get.Kvs, put.Header.Revision)
		}
	}
	for _, i := range []int{f1, f2} {
		ttl, err := c.clients[i].TimeToLive(ctx(t), short.ID, clientv3.WithAttachedKeys())
		must(t, err)
		if ttl.TTL <= 0 || !slices.Equal(leaseKeys(ttl), []string{"short"}) {
			t.Fatalf("TimeToLive via m%d while kept alive = TTL %d keys %q", i, ttl.TTL, leaseKeys(ttl))
		}
	}
	stop()

	// Without keepalives the new leader expires it.
	waitKeysGone(t, c.clients[f2], "short")
	for _, i := range []int{f1, f2} {
		ttl, err := c.clients[i].TimeToLive(ctx(t), short.ID)
		must(t, err)
		if ttl.TTL != -1 {
			t.Errorf("TimeToLive via m%d of the expired lease: TTL %d, want -1", i, ttl.TTL)
		}
	}
}
