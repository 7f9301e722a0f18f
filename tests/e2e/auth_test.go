package e2e

import (
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/metadata"
)

// authClient is a client that authenticates as user at the endpoints.
func authClient(t testing.TB, user, password string, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: endpoints, DialTimeout: 10 * time.Second, Logger: zap.NewNop(),
		Username: user, Password: password,
	})
	if err != nil {
		t.Fatalf("client for %s: %s", user, describeErr(err))
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// enableAuth creates root (with the root role) and alice, whose role
// "app" may read and write [a/, a0) and read "ro", and turns auth on.
func enableAuth(t testing.TB, cli *clientv3.Client) {
	t.Helper()
	c := ctx(t)
	_, err := cli.UserAdd(c, "root", "rootpw")
	must(t, err)
	_, err = cli.UserGrantRole(c, "root", "root")
	must(t, err)
	_, err = cli.UserAdd(c, "alice", "alicepw")
	must(t, err)
	_, err = cli.RoleAdd(c, "app")
	must(t, err)
	_, err = cli.RoleGrantPermission(c, "app", "a/", "a0", clientv3.PermissionType(clientv3.PermReadWrite))
	must(t, err)
	_, err = cli.RoleGrantPermission(c, "app", "ro", "", clientv3.PermissionType(clientv3.PermRead))
	must(t, err)
	_, err = cli.UserGrantRole(c, "alice", "app")
	must(t, err)
	_, err = cli.Put(c, "ro", "v")
	must(t, err)
	_, err = cli.Put(c, "secret", "s")
	must(t, err)
	_, err = cli.AuthEnable(c)
	must(t, err)
}

// startAuthMember is the setup of the single-member auth tests: a member
// started with opts on which enableAuth has turned auth on, and the
// member's client, which holds no credentials.
func startAuthMember(t *testing.T, opts memberOpts) (*member, *clientv3.Client) {
	t.Helper()
	m := startMember(t, opts)
	cli := m.client(t)
	enableAuth(t, cli)
	return m, cli
}

func TestAuthEnableNeedsRoot(t *testing.T) {
	cli := startMember(t, memberOpts{}).client(t)
	_, err := cli.AuthEnable(ctx(t))
	wantErr(t, err, rpctypes.ErrRootUserNotExist)
	_, err = cli.UserAdd(ctx(t), "root", "pw")
	must(t, err)
	_, err = cli.AuthEnable(ctx(t))
	wantErr(t, err, rpctypes.ErrRootRoleNotExist)
}

func TestAuthPerKeyPermissions(t *testing.T) {
	m, _ := startAuthMember(t, memberOpts{})
	alice := authClient(t, "alice", "alicepw", m.clientURL)
	c := ctx(t)

	_, err := alice.Put(c, "a/1", "x")
	must(t, err)
	_, err = alice.Get(c, "a/", clientv3.WithPrefix())
	must(t, err)
	_, err = alice.Get(c, "ro", clientv3.WithSerializable())
	must(t, err)
	_, err = alice.Delete(c, "a/1", clientv3.WithPrevKV())
	must(t, err)

	for name, op := range map[string]clientv3.Op{
		"put outside":       clientv3.OpPut("b", "x"),
		"put read-only":     clientv3.OpPut("ro", "x"),
		"get outside":       clientv3.OpGet("secret"),
		"serializable get":  clientv3.OpGet("secret", clientv3.WithSerializable()),
		"prefix too wide":   clientv3.OpGet("a", clientv3.WithPrefix()),
		"delete read-only":  clientv3.OpDelete("ro"),
		"put prev_kv on ro": clientv3.OpPut("ro", "x", clientv3.WithPrevKV()),
	} {
		_, err := alice.Do(c, op)
		if !sameErr(err, rpctypes.ErrPermissionDenied) {
			t.Errorf("%s: error = %s, want permission denied", name, describeErr(err))
		}
	}
	// A Txn is checked as a whole: the compare and both branches.
	_, err = alice.Txn(c).If(clientv3.Compare(clientv3.Value("secret"), "=", "s")).Then(clientv3.OpPut("a/2", "y")).Commit()
	wantErr(t, err, rpctypes.ErrPermissionDenied)
	_, err = alice.Txn(c).Then(clientv3.OpGet("a/2")).Else(clientv3.OpPut("b", "y")).Commit()
	wantErr(t, err, rpctypes.ErrPermissionDenied)
	_, err = alice.Txn(c).Then(clientv3.OpGet("ro"), clientv3.OpGet("secret")).Commit()
	wantErr(t, err, rpctypes.ErrPermissionDenied)
	_, err = alice.Txn(c).If(clientv3.Compare(clientv3.Value("ro"), "=", "v")).Then(clientv3.OpPut("a/2", "y")).Commit()
	must(t, err)
}

// TestAuthRequestsWithoutUser passes with CAIRN_E2E_REFERENCE=etcd.
func TestAuthRequestsWithoutUser(t *testing.T) {
	m, cli := startAuthMember(t, memberOpts{bin: referenceBin(t)})
	c := ctx(t)
	_, err := cli.Put(c, "a/1", "x")
	wantErr(t, err, rpctypes.ErrUserEmpty)
	_, err = cli.Get(c, "a/1")
	wantErr(t, err, rpctypes.ErrUserEmpty)
	_, err = cli.Status(c, m.clientURL)
	wantErr(t, err, rpctypes.ErrUserEmpty)
	_, err = cli.UserList(c)
	wantErr(t, err, rpctypes.ErrUserEmpty)
	// AuthStatus needs no token (spec 003 part 4): a client whose token
	// expired learns the revision by asking without one.
	st, err := cli.AuthStatus(c)
	must(t, err)
	if !st.Enabled || st.AuthRevision == 0 {
		t.Errorf("auth status = %+v", st)
	}
	// But, as etcd v3.7.3 does, it refuses an invalid token it is sent (a
	// simple token names the raft index that issued it; index 1 is applied,
	// so the member does not wait for it).
	bad := metadata.AppendToOutgoingContext(c, rpctypes.TokenFieldNameGRPC, "unknown.1")
	_, err = pb.NewAuthClient(cli.ActiveConnection()).AuthStatus(bad, &pb.AuthStatusRequest{})
	wantErr(t, err, rpctypes.ErrInvalidAuthToken)
}

func TestAuthAdminOnly(t *testing.T) {
	m, _ := startAuthMember(t, memberOpts{})
	alice := authClient(t, "alice", "alicepw", m.clientURL)
	root := authClient(t, "root", "rootpw", m.clientURL)
	c := ctx(t)

	_, err := alice.UserAdd(c, "bob", "pw")
	wantErr(t, err, rpctypes.ErrPermissionDenied)
	_, err = alice.Compact(c, 1)
	wantErr(t, err, rpctypes.ErrPermissionDenied)
	_, err = alice.MemberAdd(c, []string{"http://127.0.0.1:1"})
	wantErr(t, err, rpctypes.ErrPermissionDenied)
	_, err = alice.Defragment(c, m.clientURL)
	wantErr(t, err, rpctypes.ErrPermissionDenied)
	_, err = alice.Status(c, m.clientURL)
	must(t, err)
	// A user may read itself and the roles it has, nothing else.
	u, err := alice.UserGet(c, "alice")
	must(t, err)
	if strings.Join(u.Roles, ",") != "app" {
		t.Errorf("alice's roles = %v", u.Roles)
	}
	_, err = alice.RoleGet(c, "app")
	must(t, err)
	_, err = alice.UserGet(c, "root")
	wantErr(t, err, rpctypes.ErrPermissionDenied)
	_, err = alice.RoleGet(c, "root")
	wantErr(t, err, rpctypes.ErrPermissionDenied)

	_, err = root.Compact(c, 1)
	must(t, err)
	users, err := root.UserList(c)
	must(t, err)
	if strings.Join(users.Users, ",") != "alice,root" {
		t.Errorf("users = %v", users.Users)
	}
	_, err = root.UserDelete(c, "root")
	wantErr(t, err, rpctypes.ErrInvalidAuthMgmt)
}

func TestAuthenticateWrongPassword(t *testing.T) {
	m, _ := startAuthMember(t, memberOpts{})
	_, err := clientv3.New(clientv3.Config{
		Endpoints: []string{m.clientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		Username: "alice", Password: "wrong",
	})
	wantErr(t, err, rpctypes.ErrAuthFailed)
	_, err = m.client(t).Authenticate(ctx(t), "nobody", "x")
	wantErr(t, err, rpctypes.ErrAuthFailed)
}

// rawToken authenticates through the bare Auth service, so that the test,
// not the client, decides when the token is used.
func rawToken(t testing.TB, cli *clientv3.Client, user, password string) string {
	t.Helper()
	resp, err := cli.Authenticate(ctx(t), user, password)
	must(t, err)
	return resp.Token
}

// getWithToken reads key with token through the bare KV service: the
// official client would authenticate again on an invalid token.
func getWithToken(t testing.TB, cli *clientv3.Client, token, key string) error {
	t.Helper()
	c := metadata.AppendToOutgoingContext(ctx(t), rpctypes.TokenFieldNameGRPC, token)
	_, err := pb.NewKVClient(cli.ActiveConnection()).Range(c, &pb.RangeRequest{Key: []byte(key)})
	return err
}

func TestAuthSimpleTokenExpires(t *testing.T) {
	m, cli := startAuthMember(t, memberOpts{args: []string{"--auth-token-ttl=1"}})
	token := rawToken(t, cli, "alice", "alicepw")
	must(t, getWithToken(t, cli, token, "ro"))
	time.Sleep(2500 * time.Millisecond)
	wantErr(t, getWithToken(t, cli, token, "ro"), rpctypes.ErrInvalidAuthToken)
	// The official client authenticates again and goes on.
	alice := authClient(t, "alice", "alicepw", m.clientURL)
	must(t, getWithToken(t, cli, rawToken(t, cli, "alice", "alicepw"), "ro"))
	time.Sleep(2500 * time.Millisecond)
	_, err := alice.Get(ctx(t), "ro")
	must(t, err)
}

func TestAuthPasswordChangeInvalidatesTokens(t *testing.T) {
	m, cli := startAuthMember(t, memberOpts{})
	root := authClient(t, "root", "rootpw", m.clientURL)
	token := rawToken(t, cli, "alice", "alicepw")
	must(t, getWithToken(t, cli, token, "ro"))

	_, err := root.UserChangePassword(ctx(t), "alice", "newpw")
	must(t, err)
	if err := getWithToken(t, cli, token, "ro"); err == nil || !strings.Contains(describeErr(err), "Unauthenticated") &&
		!sameErr(err, rpctypes.ErrInvalidAuthToken) {
		t.Fatalf("old token after password change: %s", describeErr(err))
	}
	_, err = cli.Authenticate(ctx(t), "alice", "alicepw")
	wantErr(t, err, rpctypes.ErrAuthFailed)
	must(t, getWithToken(t, cli, rawToken(t, cli, "alice", "newpw"), "ro"))
}

func TestAuthRevokedPermissionApplies(t *testing.T) {
	m, _ := startAuthMember(t, memberOpts{})
	root := authClient(t, "root", "rootpw", m.clientURL)
	alice := authClient(t, "alice", "alicepw", m.clientURL)
	_, err := alice.Put(ctx(t), "a/1", "x")
	must(t, err)
	_, err = root.RoleRevokePermission(ctx(t), "app", "a/", "a0")
	must(t, err)
	// alice's token now carries an old revision; the client authenticates
	// again and the write is denied under the new rights.
	_, err = alice.Put(ctx(t), "a/1", "y")
	wantErr(t, err, rpctypes.ErrPermissionDenied)
}

func TestAuthWatchPermission(t *testing.T) {
	m, _ := startAuthMember(t, memberOpts{})
	alice := authClient(t, "alice", "alicepw", m.clientURL)
	resp := nextResp(t, alice.Watch(watchCtx(t), "secret"))
	if !resp.Canceled {
		t.Fatalf("watch of a forbidden key: %+v", resp)
	}
	const reason = "rpc error: code = PermissionDenied desc = etcdserver: permission denied"
	if err := resp.Err(); err == nil || !strings.Contains(err.Error(), reason) {
		t.Fatalf("watch error = %v, want reason %q", err, reason)
	}
	wch := alice.Watch(watchCtx(t), "a/", clientv3.WithPrefix())
	_, err := alice.Put(ctx(t), "a/1", "x")
	must(t, err)
	if got := renderEvents(nextResp(t, wch).Events); !strings.HasPrefix(got, "PUT a/1=x") {
		t.Fatalf("events = %s", got)
	}
}

func TestAuthLeaseKeys(t *testing.T) {
	m, _ := startAuthMember(t, memberOpts{})
	root := authClient(t, "root", "rootpw", m.clientURL)
	alice := authClient(t, "alice", "alicepw", m.clientURL)
	c := ctx(t)
	l, err := root.Grant(c, 60)
	must(t, err)
	_, err = root.Put(c, "secret", "s", clientv3.WithLease(l.ID))
	must(t, err)
	// alice may not attach keys to, nor revoke, a lease holding keys she
	// cannot write, nor list leases whose keys she cannot read.
	_, err = alice.Put(c, "a/1", "x", clientv3.WithLease(l.ID))
	wantErr(t, err, rpctypes.ErrPermissionDenied)
	_, err = alice.Revoke(c, l.ID)
	wantErr(t, err, rpctypes.ErrPermissionDenied)
	_, err = alice.Leases(c)
	wantErr(t, err, rpctypes.ErrPermissionDenied)
	own, err := alice.Grant(c, 60)
	must(t, err)
	_, err = alice.Put(c, "a/1", "x", clientv3.WithLease(own.ID))
	must(t, err)
	_, err = alice.Revoke(c, own.ID)
	must(t, err)
}

func TestAuthDisable(t *testing.T) {
	m, cli := startAuthMember(t, memberOpts{})
	alice := authClient(t, "alice", "alicepw", m.clientURL)
	_, err := alice.AuthDisable(ctx(t))
	wantErr(t, err, rpctypes.ErrPermissionDenied)
	root := authClient(t, "root", "rootpw", m.clientURL)
	_, err = root.AuthDisable(ctx(t))
	must(t, err)
	_, err = cli.Put(ctx(t), "secret", "open")
	must(t, err)
}

func TestAuthThreeMembers(t *testing.T) {
	c := startCluster(t, clusterOpts{size: 3})
	enableAuth(t, c.clients[0])
	root := authClient(t, "root", "rootpw", c.members[1].clientURL)
	_, err := root.Put(ctx(t), "a/shared", "v1")
	must(t, err)
	for i, m := range c.members {
		alice := authClient(t, "alice", "alicepw", m.clientURL)
		resp, err := alice.Get(ctx(t), "a/shared")
		must(t, err)
		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v1" {
			t.Errorf("member %d: a/shared = %v", i, resp.Kvs)
		}
		_, err = alice.Get(ctx(t), "secret", clientv3.WithSerializable())
		wantErr(t, err, rpctypes.ErrPermissionDenied)
		_, err = alice.Put(ctx(t), "b", "x")
		wantErr(t, err, rpctypes.ErrPermissionDenied)
	}
	// A simple token issued by one member is good on the others once they
	// applied its Authenticate entry.
	token := rawToken(t, c.clients[2], "alice", "alicepw")
	for i, cli := range c.clients {
		if err := getWithToken(t, cli, token, "a/shared"); err != nil {
			t.Errorf("member %d: token of member 2: %s", i, describeErr(err))
		}
	}
	// A role change made through one member binds writes through another.
	_, err = root.RoleRevokePermission(ctx(t), "app", "a/", "a0")
	must(t, err)
	alice := authClient(t, "alice", "alicepw", c.members[2].clientURL)
	_, err = alice.Put(ctx(t), "a/shared", "v2")
	wantErr(t, err, rpctypes.ErrPermissionDenied)
}

// TestAuthNameTooLongRefused: a role or user name too long to be a backend
// key is refused with "request is too large" and the member keeps serving
// (etcd v3.7.3 crashes applying it).
func TestAuthNameTooLongRefused(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	long := strings.Repeat("r", 40000)
	if _, err := cli.RoleAdd(ctx(t), long); err == nil || !strings.Contains(err.Error(), "etcdserver: request is too large") {
		t.Fatalf("RoleAdd of a 40000-byte name: %v, want request is too large", err)
	}
	if _, err := cli.UserAdd(ctx(t), long, "pw"); err == nil || !strings.Contains(err.Error(), "etcdserver: request is too large") {
		t.Fatalf("UserAdd of a 40000-byte name: %v, want request is too large", err)
	}
	mustPut(t, cli, "still", "serving")
}
