package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A lease of leaseCPTTL seconds, with no keepalive, outlives its leader:
// the leader is killed leaseCPKillAfter into it. The test cluster's
// election timeout is 500 ms, which is also how much a new leader extends
// every lease by.
const (
	leaseCPTTL       = 10
	leaseCPKillAfter = 6 * time.Second
	// leaseCPInterval is the checkpoint interval given to cairn (etcd's is
	// 5 minutes and cannot be changed).
	leaseCPInterval = "1s"
	// leaseCPGiveUp bounds waiting for the revoke: twice the TTL and a lot
	// of slack; reaching it means the lease never expired.
	leaseCPGiveUp = 2*leaseCPTTL*time.Second + 10*time.Second
)

// TestLeaseCheckpointLeaderChange: with cairn's default, lease
// checkpointing (feature gate LeaseCheckpoint) on, the leader records each
// lease's remaining TTL through raft, so when the leader dies the next one
// counts the lease down from what was left rather than from its full TTL.
// The lease expires once, no earlier than its TTL after the grant, and
// well before a full TTL after the leader's death; its keys go in one
// revision.
func TestLeaseCheckpointLeaderChange(t *testing.T) {
	if os.Getenv(referenceEnv) == "etcd" {
		t.Skip("needs cairn's --experimental-lease-checkpoint-interval; etcd checkpoints every 5 minutes")
	}
	r := runLeaseLeaderChange(t, []string{"--experimental-lease-checkpoint-interval=" + leaseCPInterval})
	if r.revokedAt.Before(r.grantedAt.Add(leaseCPTTL * time.Second)) {
		t.Errorf("lease revoked %v after the grant, before its TTL of %ds", r.revokedAt.Sub(r.grantedAt), leaseCPTTL)
	}
	// Without the checkpoints the new leader, promoted after the kill,
	// would let the lease live a full TTL from its promotion.
	if !r.revokedAt.Before(r.killedAt.Add(leaseCPTTL * time.Second)) {
		t.Errorf("lease revoked %v after the leader was killed (%v after the grant): a full TTL of %ds, as if never checkpointed",
			r.revokedAt.Sub(r.killedAt), r.revokedAt.Sub(r.grantedAt), leaseCPTTL)
	}
}

// TestLeaseCheckpointDisabledLeaderChange documents etcd's default, which
// --feature-gates=LeaseCheckpoint=false restores: nothing is checkpointed
// and the new leader renews every lease on promotion, so the lease lives a
// full TTL (plus an election timeout) from the promotion. A lease whose
// leader keeps changing never expires (etcd issue 9888). Run against etcd
// itself with CAIRN_E2E_REFERENCE=etcd.
func TestLeaseCheckpointDisabledLeaderChange(t *testing.T) {
	var args []string
	if os.Getenv(referenceEnv) != "etcd" {
		args = []string{"--feature-gates=LeaseCheckpoint=false", "--experimental-lease-checkpoint-interval=" + leaseCPInterval}
	}
	r := runLeaseLeaderChange(t, args)
	// The promotion follows the kill, so the lease lives at least a full
	// TTL past the kill.
	if r.revokedAt.Before(r.killedAt.Add(leaseCPTTL * time.Second)) {
		t.Errorf("lease revoked %v after the leader was killed, before a full TTL of %ds: the new leader did not renew it",
			r.revokedAt.Sub(r.killedAt), leaseCPTTL)
	}
	// ... and no more than that: the TTL, the 500 ms extension, the new
	// lessor's 500 ms look for expired leases and some slack, counted from
	// when the test saw the new leader (after its promotion).
	if late := r.revokedAt.Sub(r.electedAt); late > leaseCPTTL*time.Second+2*time.Second {
		t.Errorf("lease revoked %v after the new leader was seen, want about its TTL of %ds", late, leaseCPTTL)
	}
}

// leaseLeaderChange is what runLeaseLeaderChange saw happen.
type leaseLeaderChange struct {
	grantedAt time.Time // just before the grant was sent
	killedAt  time.Time // just before the leader was killed
	electedAt time.Time // when the survivors were seen to agree on a new leader
	revokedAt time.Time // when the deletion of the lease's keys was seen
}

// runLeaseLeaderChange starts a three-member cluster with args, grants a
// lease of leaseCPTTL seconds through a follower, attaches three keys,
// kills the leader leaseCPKillAfter later and waits for the lease to
// expire. It checks the expiry happened exactly once: the keys are gone,
// deleted in one revision that is still the cluster's latest a while
// later, and the lease is unknown to the survivors.
func runLeaseLeaderChange(t *testing.T, args []string) leaseLeaderChange {
	c := startCluster(t, clusterOpts{size: 3, args: args})
	leader := c.waitLeader(c.all()...)
	f := c.except(leader)[0]
	cli := c.clients[f]
	var r leaseLeaderChange

	r.grantedAt = time.Now()
	g, err := cli.Grant(ctx(t), leaseCPTTL)
	must(t, err)
	keys := []string{"lease-cp/a", "lease-cp/b", "lease-cp/c"}
	var lastPut int64
	for _, k := range keys {
		resp, err := cli.Put(ctx(t), k, "v", clientv3.WithLease(g.ID))
		must(t, err)
		lastPut = resp.Header.Revision
	}

	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	events := make(chan *clientv3.Event, 16)
	go func() {
		defer close(events)
		for wr := range cli.Watch(wctx, "lease-cp/", clientv3.WithPrefix(), clientv3.WithRev(lastPut+1)) {
			for _, ev := range wr.Events {
				events <- ev
			}
		}
	}()

	time.Sleep(time.Until(r.grantedAt.Add(leaseCPKillAfter)))
	r.killedAt = time.Now()
	c.members[leader].kill()
	newLeader := c.waitLeader(c.except(leader)...)
	r.electedAt = time.Now()
	t.Logf("killed leader m%d %v after the grant; m%d leads %v after the kill",
		leader, r.killedAt.Sub(r.grantedAt), newLeader, r.electedAt.Sub(r.killedAt))

	var deletes []*clientv3.Event
	giveUp := time.After(time.Until(r.grantedAt.Add(leaseCPGiveUp)))
	for len(deletes) < len(keys) {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("watch ended before the lease's keys were deleted")
			}
			if ev.Type != mvccpb.DELETE {
				t.Fatalf("unexpected event %v %q at revision %d", ev.Type, ev.Kv.Key, ev.Kv.ModRevision)
			}
			if len(deletes) == 0 {
				r.revokedAt = time.Now()
			}
			deletes = append(deletes, ev)
		case <-giveUp:
			t.Fatalf("lease of %ds still not expired %v after the grant (%d of %d keys deleted)",
				leaseCPTTL, leaseCPGiveUp, len(deletes), len(keys))
		}
	}
	t.Logf("lease revoked %v after the grant, %v after the kill, %v after the new leader was seen",
		r.revokedAt.Sub(r.grantedAt), r.revokedAt.Sub(r.killedAt), r.revokedAt.Sub(r.electedAt))

	deleteRev := deletes[0].Kv.ModRevision
	for i, ev := range deletes {
		if ev.Kv.ModRevision != deleteRev || string(ev.Kv.Key) != keys[i] {
			t.Errorf("delete %d: %q at revision %d, want %q at revision %d (all keys in one revision, in key order)",
				i, ev.Kv.Key, ev.Kv.ModRevision, keys[i], deleteRev)
		}
	}
	if deleteRev != lastPut+1 {
		t.Errorf("keys deleted at revision %d, want %d (the next after the puts)", deleteRev, lastPut+1)
	}
	// A second expiry or a retried revoke must not delete anything again;
	// a new leader re-reports a lease that is still there after the
	// request timeout (5 s + 2 election timeouts), so wait a little past
	// the lessor's next looks.
	select {
	case ev := <-events:
		t.Errorf("event after the expiry: %v %q at revision %d", ev.Type, ev.Kv.Key, ev.Kv.ModRevision)
	case <-time.After(3 * time.Second):
	}
	for _, i := range c.except(leader) {
		if rev := c.syncRead(t, i); rev != deleteRev {
			t.Errorf("m%d is at revision %d, want %d: something was written after the expiry", i, rev, deleteRev)
		}
		resp, err := c.clients[i].Get(ctx(t), "lease-cp/", clientv3.WithPrefix())
		must(t, err)
		if len(resp.Kvs) != 0 {
			t.Errorf("m%d still holds %s", i, kvPairs(resp.Kvs))
		}
		ttl, err := c.clients[i].TimeToLive(ctx(t), g.ID)
		must(t, err)
		if ttl.TTL != -1 {
			t.Errorf("m%d: TimeToLive of the expired lease = %d, want -1", i, ttl.TTL)
		}
		for _, id := range leaseIDs(t, c.clients[i]) {
			if id == g.ID {
				t.Errorf("m%d still lists lease %x", i, int64(id))
			}
		}
	}
	return r
}
