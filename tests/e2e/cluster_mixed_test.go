package e2e

import (
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestClusterMixedWithEtcd runs two cairn members and one real etcd
// v3.7.3 member, started with the same flags, as one cluster: writes
// through any member are read back from all, and after the etcd member is
// killed, misses writes and restarts, all three hold identical data and
// agree on HashKV.
func TestClusterMixedWithEtcd(t *testing.T) {
	const etcdIdx = 2
	c := startCluster(t, clusterOpts{size: 3, bins: map[int]string{etcdIdx: etcdBinary(t)}})
	for i, cli := range c.clients {
		mustPut(t, cli, fmt.Sprintf("k%d", i), fmt.Sprintf("via-m%d", i))
	}
	for i, cli := range c.clients {
		resp, err := cli.Get(ctx(t), "k", clientv3.WithPrefix())
		must(t, err)
		if got, want := kvPairs(resp.Kvs), "k0=via-m0,k1=via-m1,k2=via-m2"; got != want {
			t.Errorf("m%d reads %s, want %s", i, got, want)
		}
	}
	c.assertConsistent(t, c.all()...)

	c.members[etcdIdx].kill()
	c.waitLeader(c.except(etcdIdx)...)
	for n := range 50 {
		mustPut(t, c.clients[n%2], fmt.Sprintf("while-down/%02d", n), fmt.Sprint(n))
	}
	mustPut(t, c.clients[0], "k2", "overwritten")
	c.members[etcdIdx].restart()
	c.waitValue(t, etcdIdx, "k2", "overwritten")
	c.waitLeader(c.all()...)
	resp, err := c.clients[etcdIdx].Get(ctx(t), "while-down/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	must(t, err)
	if resp.Count != 50 {
		t.Errorf("restarted etcd member has %d of the 50 keys written while it was down", resp.Count)
	}
	mustPut(t, c.clients[etcdIdx], "after", "restart")
	for i := range c.members {
		c.waitValue(t, i, "after", "restart")
	}
	c.assertConsistent(t, c.all()...)
}
