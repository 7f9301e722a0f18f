package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// restartMembers launches the given stopped members together and waits
// until each is ready (a member is ready only once a quorum runs).
func (c *cluster) restartMembers(t *testing.T, idx ...int) {
	t.Helper()
	ready := make([]<-chan struct{}, len(idx))
	for k, i := range idx {
		ready[k] = c.members[i].launch()
	}
	for k, i := range idx {
		c.members[i].waitReady(ready[k])
	}
}

// writeAcked puts n keys with prefix through member i, fails the test
// unless the member acknowledges every one, and returns them for
// assertAcked. Its callers all write where a quorum is up, so a lost write
// there is a failure, not data to check later.
func writeAcked(t *testing.T, c *cluster, i int, prefix string, n int) map[string]string {
	t.Helper()
	acked := map[string]string{}
	for k := 0; k < n; k++ {
		key, val := fmt.Sprintf("%s/%04d", prefix, k), fmt.Sprintf("v%d", k)
		if _, err := c.clients[i].Put(ctx(t), key, val); err != nil {
			t.Fatalf("put %s through m%d (write %d of %d): %v", key, i, k+1, n, err)
		}
		acked[key] = val
	}
	return acked
}

func assertAcked(t *testing.T, c *cluster, i int, acked map[string]string) {
	t.Helper()
	for key, val := range acked {
		resp, err := c.clients[i].Get(ctx(t), key)
		must(t, err)
		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != val {
			t.Fatalf("acknowledged %s=%s missing on m%d: %s", key, val, i, kvPairs(resp.Kvs))
		}
	}
}

// TestClusterWholeRestart kills every member at once and starts them again:
// every acknowledged write is there and the members agree.
func TestClusterWholeRestart(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})
	c.waitLeader(c.all()...)
	acked := writeAcked(t, c, 0, "whole", 100)
	for _, i := range c.all() {
		c.members[i].kill()
	}
	c.restartMembers(t, c.all()...)
	c.waitLeader(c.all()...)
	for _, i := range c.all() {
		assertAcked(t, c, i, acked)
	}
	c.assertConsistent(t, c.all()...)
}

// TestClusterFiveMembersQuorum: with two of five members killed the cluster
// keeps serving; with three killed it refuses writes and linearizable reads
// without corrupting anything, and recovers when they return.
func TestClusterFiveMembersQuorum(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 5})
	l := c.waitLeader(c.all()...)
	down := c.except(l)[:2] // two followers
	for _, i := range down {
		c.members[i].kill()
	}
	alive := c.except(down...)
	acked := writeAcked(t, c, l, "two-down", 20)

	third := c.except(append(down, l)...)[0]
	c.members[third].kill()
	down = append(down, third)
	survivors := c.except(down...)
	for _, i := range survivors {
		cctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := c.clients[i].Put(cctx, "no-quorum", "x")
		cancel()
		if err == nil {
			t.Fatalf("m%d accepted a write with three of five members down", i)
		}
		cctx, cancel = context.WithTimeout(context.Background(), 3*time.Second)
		_, err = c.clients[i].Get(cctx, "two-down/0000")
		cancel()
		if err == nil {
			t.Fatalf("m%d served a linearizable read with three of five members down", i)
		}
	}
	c.restartMembers(t, down...)
	c.waitLeader(c.all()...)
	if _, err := c.clients[down[0]].Put(ctx(t), "recovered", "yes"); err != nil {
		t.Fatalf("write after the members returned: %s", describeErr(err))
	}
	for _, i := range c.all() {
		assertAcked(t, c, i, acked)
	}
	c.assertConsistent(t, c.all()...)
	_ = alive
}
