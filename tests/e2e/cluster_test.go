package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/tests/harness"
)

// TestClusterReplication writes through every member of a 3-member cluster
// (followers forward to the leader) and reads every write back from every
// member, linearizably and serializably; all members name the same leader
// and their headers carry the same cluster ID and their own member ID.
func TestClusterReplication(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})

	var clusterID uint64
	checkHeader := func(what string, i int, cid, mid uint64) {
		t.Helper()
		if clusterID == 0 {
			clusterID = cid
		}
		if cid == 0 || cid != clusterID {
			t.Errorf("%s on m%d: cluster_id %x, want %x (same on every member)", what, i, cid, clusterID)
		}
		if mid != c.ids[i] {
			t.Errorf("%s on m%d: member_id %x, want its own ID %x", what, i, mid, c.ids[i])
		}
	}

	revs := make([]int64, len(c.members))
	for i, cli := range c.clients {
		resp, err := cli.Put(ctx(t), fmt.Sprintf("k%d", i), fmt.Sprintf("from-m%d", i))
		must(t, err)
		checkHeader("Put", i, resp.Header.ClusterId, resp.Header.MemberId)
		revs[i] = resp.Header.Revision
		if i > 0 && revs[i] != revs[i-1]+1 {
			t.Errorf("put on m%d got revision %d after %d: writes through different members must share one revision sequence", i, revs[i], revs[i-1])
		}
	}
	const want = "k0=from-m0,k1=from-m1,k2=from-m2"
	last := revs[len(revs)-1]
	for i, cli := range c.clients {
		resp, err := cli.Get(ctx(t), "k", clientv3.WithPrefix())
		must(t, err)
		checkHeader("linearizable Get", i, resp.Header.ClusterId, resp.Header.MemberId)
		if got := kvPairs(resp.Kvs); got != want || resp.Header.Revision != last {
			t.Errorf("linearizable Get on m%d = %s at revision %d, want %s at %d", i, got, resp.Header.Revision, want, last)
		}
		// The linearizable read made the member apply everything committed
		// before it, so a serializable read now must see the same.
		resp, err = cli.Get(ctx(t), "k", clientv3.WithPrefix(), clientv3.WithSerializable())
		must(t, err)
		checkHeader("serializable Get", i, resp.Header.ClusterId, resp.Header.MemberId)
		if got := kvPairs(resp.Kvs); got != want || resp.Header.Revision != last {
			t.Errorf("serializable Get on m%d = %s at revision %d, want %s at %d", i, got, resp.Header.Revision, want, last)
		}
		for _, kv := range resp.Kvs {
			if kv.CreateRevision != revs[kv.Key[1]-'0'] {
				t.Errorf("m%d: %s created at %d, put returned %d", i, kv.Key, kv.CreateRevision, revs[kv.Key[1]-'0'])
			}
		}
	}

	var leader uint64
	for i, cli := range c.clients {
		s, err := cli.Status(ctx(t), c.members[i].clientURL)
		must(t, err)
		checkHeader("Status", i, s.Header.ClusterId, s.Header.MemberId)
		if i == 0 {
			leader = s.Leader
		}
		if s.Leader == 0 || s.Leader != leader {
			t.Errorf("Status on m%d names leader %x, m0 names %x", i, s.Leader, leader)
		}
		if s.RaftTerm == 0 || s.RaftIndex == 0 {
			t.Errorf("Status on m%d: raft term %d index %d", i, s.RaftTerm, s.RaftIndex)
		}
	}
	if c.index(leader) < 0 {
		t.Errorf("leader %x is not a member (%x)", leader, c.ids)
	}

	ml, err := c.clients[1].MemberList(ctx(t))
	must(t, err)
	checkHeader("MemberList", 1, ml.Header.ClusterId, ml.Header.MemberId)
	if len(ml.Members) != 3 {
		t.Errorf("MemberList has %d members, want 3", len(ml.Members))
	}
	for _, mm := range ml.Members {
		i := c.index(mm.ID)
		if i < 0 || len(mm.ClientURLs) != 1 || mm.ClientURLs[0] != c.members[i].clientURL {
			t.Errorf("MemberList entry %s (%x) client URLs %v", mm.Name, mm.ID, mm.ClientURLs)
		}
	}
	c.assertConsistent(t, c.all()...)
}

// TestClusterKillLeaderUnderLoad SIGKILLs the leader while writers keep
// putting through every member; the survivors elect a new leader and keep
// acknowledging writes, and after the killed member restarts every
// acknowledged write is on every member, whose HashKVs agree.
func TestClusterKillLeaderUnderLoad(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})
	oldLeader := c.waitLeader(c.all()...)

	var (
		mu    sync.Mutex
		acked = map[string]string{}
		down  atomic.Int64 // index+1 of the killed member, 0 if none
		n     atomic.Int64
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const writers = 4
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				i := (w + seq) % len(c.members)
				if int64(i+1) == down.Load() {
					continue
				}
				key, val := fmt.Sprintf("load/w%d/%05d", w, seq), fmt.Sprintf("v%d-%d", w, seq)
				cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err := c.clients[i].Put(cctx, key, val)
				cancel()
				if err == nil {
					mu.Lock()
					acked[key] = val
					mu.Unlock()
					n.Add(1)
				}
			}
		}()
	}
	var stopOnce sync.Once
	stopWriters := func() { stopOnce.Do(func() { close(stop); wg.Wait() }) }
	defer stopWriters()

	waitAcked := func(target int64) {
		t.Helper()
		if !harness.Poll(clusterWait, 10*time.Millisecond, func() bool { return n.Load() >= target }) {
			t.Fatalf("only %d writes acknowledged, waiting for %d", n.Load(), target)
		}
	}
	waitAcked(100)
	down.Store(int64(oldLeader + 1))
	c.members[oldLeader].kill()
	killedAt := n.Load()
	newLeader := c.waitLeader(c.except(oldLeader)...)
	t.Logf("killed leader m%d after %d acked writes; m%d leads now", oldLeader, killedAt, newLeader)
	waitAcked(killedAt + 100)
	stopWriters()

	c.members[oldLeader].restart()
	c.waitLeader(c.all()...)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d writes acknowledged", len(acked))
	for i, cli := range c.clients {
		resp, err := cli.Get(ctx(t), "load/", clientv3.WithPrefix())
		must(t, err)
		got := map[string]string{}
		for _, kv := range resp.Kvs {
			got[string(kv.Key)] = string(kv.Value)
		}
		lost := 0
		for k, v := range acked {
			if got[k] != v {
				if lost < 5 {
					t.Errorf("m%d: acknowledged write %s=%s reads as %q", i, k, v, got[k])
				}
				lost++
			}
		}
		if lost > 0 {
			t.Fatalf("m%d lost %d of %d acknowledged writes", i, lost, len(acked))
		}
	}
	c.assertConsistent(t, c.all()...)
}

// TestClusterMoveLeader hands leadership to a follower with MoveLeader
// through the leader; a follower refuses MoveLeader, and so does the leader
// for an ID that is not a member.
func TestClusterMoveLeader(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})
	l := c.waitLeader(c.all()...)
	f := c.except(l)[0]
	other := c.except(l, f)[0]

	_, err := c.clients[f].MoveLeader(ctx(t), c.ids[other])
	wantErr(t, err, rpctypes.ErrNotLeader)
	_, err = c.clients[l].MoveLeader(ctx(t), 0xdeadbeef)
	wantErr(t, err, rpctypes.ErrBadLeaderTransferee)

	before, err := c.status(l, requestTimeout)
	must(t, err)
	if _, err := c.clients[l].MoveLeader(ctx(t), c.ids[f]); err != nil {
		t.Fatalf("MoveLeader to m%d through leader m%d: %s", f, l, describeErr(err))
	}
	// MoveLeader returns once the old leader knows the new one.
	s, err := c.status(l, requestTimeout)
	must(t, err)
	if s.Leader != c.ids[f] {
		t.Errorf("after MoveLeader the old leader m%d names leader %x, want m%d (%x)", l, s.Leader, f, c.ids[f])
	}
	if s.RaftTerm <= before.RaftTerm {
		t.Errorf("raft term %d after the transfer, %d before", s.RaftTerm, before.RaftTerm)
	}
	if got := c.waitLeader(c.all()...); got != f {
		t.Fatalf("leader is m%d after MoveLeader to m%d", got, f)
	}
	// The old leader, now a follower, still accepts writes.
	mustPut(t, c.clients[l], "after-move", "x")
	for i := range c.members {
		c.waitValue(t, i, "after-move", "x")
	}
}
