package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestAuthSnapshotCatchUp: a follower is down while the auth state changes
// (users, roles, a revoked and a new grant, auth enabled) and while enough
// is written that the leader compacts its log past the follower; the
// restarted follower catches up by snapshot, and the reads it serves
// itself (serializable) are checked against the new auth state, not the
// one it had before. Passes with CAIRN_E2E_REFERENCE=etcd.
func TestAuthSnapshotCatchUp(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3, args: []string{"--snapshot-count", "100", "--snapshot-catchup-entries", "10"}})
	l := c.waitLeader(c.all()...)
	f := c.except(l)[0]
	cli := c.clients[l]
	for _, kv := range [][2]string{{"a/1", "x"}, {"secret", "s"}, {"ro", "v"}} {
		mustPut(t, cli, kv[0], kv[1])
	}
	// Before the stop alice may read "secret": the follower's auth store
	// holds that grant, and auth is off.
	_, err := cli.UserAdd(ctx(t), "alice", "alicepw")
	must(t, err)
	_, err = cli.RoleAdd(ctx(t), "app")
	must(t, err)
	_, err = cli.RoleGrantPermission(ctx(t), "app", "secret", "", clientv3.PermissionType(clientv3.PermRead))
	must(t, err)
	_, err = cli.UserGrantRole(ctx(t), "alice", "app")
	must(t, err)
	c.waitValue(t, f, "ro", "v")
	before, err := c.clients[f].AuthStatus(ctx(t))
	must(t, err)
	if _, err := c.sigterm(f); err != nil {
		t.Fatalf("stopping m%d: %v", f, err)
	}

	_, err = cli.RoleRevokePermission(ctx(t), "app", "secret", "")
	must(t, err)
	_, err = cli.RoleGrantPermission(ctx(t), "app", "a/", "a0", clientv3.PermissionType(clientv3.PermReadWrite))
	must(t, err)
	_, err = cli.RoleGrantPermission(ctx(t), "app", "ro", "", clientv3.PermissionType(clientv3.PermRead))
	must(t, err)
	_, err = cli.UserAdd(ctx(t), "root", "rootpw")
	must(t, err)
	_, err = cli.UserGrantRole(ctx(t), "root", "root")
	must(t, err)
	_, err = cli.AuthEnable(ctx(t))
	must(t, err)
	root := authClient(t, "root", "rootpw", c.members[l].clientURL)
	_, err = root.UserAdd(ctx(t), "bob", "bobpw")
	must(t, err)
	_, err = root.RoleAdd(ctx(t), "ops")
	must(t, err)
	_, err = root.RoleGrantPermission(ctx(t), "ops", "secret", "", clientv3.PermissionType(clientv3.PermRead))
	must(t, err)
	_, err = root.UserGrantRole(ctx(t), "bob", "ops")
	must(t, err)
	const writes = 300
	putConcurrently(t, root, "bulk/", writes)
	want, err := root.AuthStatus(ctx(t))
	must(t, err)
	rev := currentRev(t, root)

	c.members[f].restart()
	rootF := authClient(t, "root", "rootpw", c.members[f].clientURL)
	waitSerializable(t, rootF, fmt.Sprintf("bulk/%03d", writes-1), rev)
	if log := logSince(t, c.members[f]); !strings.Contains(log, "applied snapshot") {
		t.Fatalf("restarted m%d did not catch up by snapshot; its log since restart:\n%s", f, log)
	}

	st, err := rootF.AuthStatus(ctx(t))
	must(t, err)
	if !st.Enabled || st.AuthRevision != want.AuthRevision || st.AuthRevision <= before.AuthRevision {
		t.Errorf("m%d auth status = enabled %v revision %d, want enabled at the leader's revision %d (was %d)",
			f, st.Enabled, st.AuthRevision, want.AuthRevision, before.AuthRevision)
	}
	serializable := func(cli *clientv3.Client, key string) error {
		_, err := cli.Get(ctx(t), key, clientv3.WithSerializable())
		return err
	}
	wantErr(t, serializable(c.clients[f], "ro"), rpctypes.ErrUserEmpty)
	alice := authClient(t, "alice", "alicepw", c.members[f].clientURL)
	wantErr(t, serializable(alice, "secret"), rpctypes.ErrPermissionDenied)
	must(t, serializable(alice, "a/1"))
	must(t, serializable(alice, "ro"))
	bob := authClient(t, "bob", "bobpw", c.members[f].clientURL)
	must(t, serializable(bob, "secret"))
	wantErr(t, serializable(bob, "ro"), rpctypes.ErrPermissionDenied)
	users, err := rootF.UserList(ctx(t))
	must(t, err)
	if got := strings.Join(users.Users, ","); got != "alice,bob,root" {
		t.Errorf("m%d users = %s", f, got)
	}
}

// putConcurrently writes n keys prefix%03d with 8 writers.
func putConcurrently(t *testing.T, cli *clientv3.Client, prefix string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := w; k < n; k += 8 {
				cctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
				_, err := cli.Put(cctx, fmt.Sprintf("%s%03d", prefix, k), strings.Repeat("v", 100))
				cancel()
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatalf("put: %s", describeErr(err))
	}
}
