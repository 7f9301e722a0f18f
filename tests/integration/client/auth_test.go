package client_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/tests/harness"
)

// authMember starts a member (with the extra flags) with users root
// (role root) and alice (role app: readwrite on the prefix "a/"), enables
// auth and returns the member and a client of root.
func authMember(t *testing.T, extra ...string) (*harness.Member, *client.Client) {
	t.Helper()
	// bcrypt.MinCost: tests need no strong hashes.
	m := startCluster(t, 1, append([]string{"--bcrypt-cost", "4"}, extra...)...)[0]
	admin := newClient(t, m.Endpoint())
	ctx := testCtx(t)
	must(admin.UserAdd(ctx, "root", "rootpw"))
	must(admin.RoleAdd(ctx, "root"))
	must(admin.UserGrantRole(ctx, "root", "root"))
	must(admin.RoleAdd(ctx, "app"))
	must(admin.RoleGrantPermission(ctx, "app", "a/", client.GetPrefixRangeEnd("a/"), client.PermReadWrite))
	must(admin.UserAdd(ctx, "alice", "alicepw"))
	must(admin.UserGrantRole(ctx, "alice", "app"))
	must(admin.AuthEnable(ctx))
	return m, userClient(t, m.Endpoint(), "root", "rootpw")
}

func userClient(t *testing.T, url, user, password string, opts ...grpc.DialOption) *client.Client {
	t.Helper()
	return userClientWith(t, url, user, password, 0, opts...)
}

// userClientWith is userClient with a HealthCheckInterval.
func userClientWith(t *testing.T, url, user, password string, healthCheck time.Duration, opts ...grpc.DialOption) *client.Client {
	t.Helper()
	return harness.CairnClient(t, client.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, Username: user, Password: password, HealthCheckInterval: healthCheck, DialOptions: opts})
}

// issuedTokens records the tokens a server issues to one client: an
// interceptor on the client's conn sees every Authenticate reply, so a test
// outside the client package can tell when the client got a new token.
type issuedTokens struct {
	mu     sync.Mutex
	tokens []string
}

// dialOption installs the recording interceptor.
func (it *issuedTokens) dialOption() grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoke(ctx, method, req, reply, cc, opts...)
		if r, ok := reply.(*pb.AuthenticateResponse); ok && err == nil && method == "/etcdserverpb.Auth/Authenticate" {
			it.mu.Lock()
			it.tokens = append(it.tokens, r.Token)
			it.mu.Unlock()
		}
		return err
	})
}

// count is the number of tokens issued so far.
func (it *issuedTokens) count() int {
	it.mu.Lock()
	defer it.mu.Unlock()
	return len(it.tokens)
}

// latest is the token issued last ("" before the first).
func (it *issuedTokens) latest() string {
	it.mu.Lock()
	defer it.mu.Unlock()
	if len(it.tokens) == 0 {
		return ""
	}
	return it.tokens[len(it.tokens)-1]
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got error %v, want %v", what, err, want)
	}
}

func TestAuthAPI(t *testing.T) {
	m, root := authMember(t)
	ctx := testCtx(t)

	st := must(root.AuthStatus(ctx))
	if !st.Enabled || st.AuthRevision == 0 {
		t.Errorf("auth status %+v", st)
	}
	if got := must(root.UserList(ctx)).Users; !reflect.DeepEqual(got, []string{"alice", "root"}) {
		t.Errorf("users %v", got)
	}
	if got := must(root.UserGet(ctx, "alice")).Roles; !reflect.DeepEqual(got, []string{"app"}) {
		t.Errorf("alice's roles %v", got)
	}
	if got := must(root.RoleList(ctx)).Roles; !reflect.DeepEqual(got, []string{"app", "root"}) {
		t.Errorf("roles %v", got)
	}
	perms := must(root.RoleGet(ctx, "app")).Perm
	if len(perms) != 1 || string(perms[0].Key) != "a/" || string(perms[0].RangeEnd) != "a0" || perms[0].PermType != client.PermReadWrite {
		t.Errorf("app's permissions %v", perms)
	}

	must(root.UserAddWithOptions(ctx, "cn-only", "", &client.UserAddOptions{NoPassword: true}))
	const noPasswordErr = "auth: authentication failed, password was given for no password user"
	if _, err := root.Authenticate(ctx, "cn-only", "x"); rpctypes.ErrorDesc(err) != noPasswordErr {
		t.Errorf("authenticate a no-password user: %v", err)
	}
	must(root.RoleGrantPermission(ctx, "app", "k", "", client.PermRead))
	must(root.RoleRevokePermission(ctx, "app", "k", ""))
	_, err := root.RoleRevokePermission(ctx, "app", "k", "")
	wantErr(t, "revoke a revoked permission", err, rpctypes.ErrPermissionNotGranted)
	must(root.UserRevokeRole(ctx, "alice", "app"))
	must(root.UserGrantRole(ctx, "alice", "app"))
	must(root.UserChangePassword(ctx, "alice", "newpw"))
	must(root.Authenticate(ctx, "alice", "newpw"))
	must(root.UserDelete(ctx, "cn-only"))
	must(root.RoleAdd(ctx, "spare"))
	must(root.RoleDelete(ctx, "spare"))

	alice := userClient(t, m.Endpoint(), "alice", "newpw")
	must(alice.Put(ctx, "a/1", "v"))
	must(alice.UserGet(ctx, "alice")) // a user may read itself
	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"put outside the grant", func() error { _, err := alice.Put(ctx, "b", "v"); return err }, rpctypes.ErrPermissionDenied},
		{"user list needs root", func() error { _, err := alice.UserList(ctx); return err }, rpctypes.ErrPermissionDenied},
		{"role add needs root", func() error { _, err := alice.RoleAdd(ctx, "r"); return err }, rpctypes.ErrPermissionDenied},
		{"unknown user", func() error { _, err := root.UserGet(ctx, "bob"); return err }, rpctypes.ErrUserNotFound},
		{"unknown role", func() error { _, err := root.UserGrantRole(ctx, "alice", "nope"); return err }, rpctypes.ErrRoleNotFound},
		{"duplicate user", func() error { _, err := root.UserAdd(ctx, "alice", "x"); return err }, rpctypes.ErrUserAlreadyExist},
		{"root keeps its role", func() error { _, err := root.UserRevokeRole(ctx, "root", "root"); return err }, rpctypes.ErrInvalidAuthMgmt},
		{"no credentials", func() error { _, err := newClient(t, m.Endpoint()).Get(ctx, "a/1"); return err }, rpctypes.ErrUserEmpty},
		{"wrong password", func() error {
			_, err := client.New(client.Config{Endpoints: []string{m.Endpoint()}, DialTimeout: 5 * time.Second, Username: "alice", Password: "alicepw"})
			return err
		}, rpctypes.ErrAuthFailed},
	} {
		t.Run(tc.name, func(t *testing.T) { wantErr(t, tc.name, tc.call(), tc.want) })
	}

	must(root.AuthDisable(ctx))
	if must(root.AuthStatus(ctx)).Enabled {
		t.Error("auth still enabled")
	}
	must(newClient(t, m.Endpoint()).Put(ctx, "b", "v"))
}

// TestAuthTokenExpires: a simple token unused for longer than its TTL is
// no longer accepted; the client gets a new one, for a request and for a
// watch, without the caller seeing an error.
func TestAuthTokenExpires(t *testing.T) {
	const ttl = time.Second
	m, _ := authMember(t, "--auth-token-ttl", strconv.Itoa(int(ttl/time.Second)))
	// Idle clients: a health-checking client's Status calls use its
	// simple token every second, so it would never expire.
	var aliceTokens, rootTokens issuedTokens
	alice := userClientWith(t, m.Endpoint(), "alice", "alicepw", -1, aliceTokens.dialOption())
	root := userClientWith(t, m.Endpoint(), "root", "rootpw", -1, rootTokens.dialOption())
	ctx := testCtx(t)

	first := aliceTokens.latest()
	time.Sleep(ttl + ttl/2) // the token expires unused
	must(alice.Put(ctx, "a/1", "v1"))
	second := aliceTokens.latest()
	if second == first || second == "" {
		t.Fatalf("token not renewed: %q then %q", first, second)
	}

	time.Sleep(ttl + ttl/2)
	wch := alice.Watch(ctx, "a/", client.WithPrefix(), client.WithCreatedNotify())
	if wr := <-wch; !wr.Created || wr.Err() != nil {
		t.Fatalf("watch with an expired token: %+v, %v", wr, wr.Err())
	}
	if aliceTokens.latest() == second {
		t.Error("watch did not renew the token")
	}
	must(root.Put(ctx, "a/2", "v2"))
	if wr := <-wch; len(wr.Events) != 1 || string(wr.Events[0].Kv.Key) != "a/2" {
		t.Errorf("watch event %+v, %v", wr, wr.Err())
	}

	// A server-streaming call is refused in its first answer.
	rootToken := rootTokens.latest()
	time.Sleep(ttl + ttl/2)
	rc := must(root.Snapshot(ctx))
	n, err := io.Copy(io.Discard, rc)
	rc.Close()
	if err != nil || n == 0 {
		t.Errorf("snapshot with an expired token: %d bytes, %v", n, err)
	}
	if rootTokens.latest() == rootToken {
		t.Error("snapshot did not renew the token")
	}
}

// jwtKeys writes an ES256 key pair and returns the private key and the
// --auth-token value that uses it.
func jwtKeys(t *testing.T) (*ecdsa.PrivateKey, string) {
	t.Helper()
	key := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	dir := t.TempDir()
	priv := filepath.Join(dir, "jwt.key")
	pub := filepath.Join(dir, "jwt.pub")
	writePEM(t, priv, "EC PRIVATE KEY", must(x509.MarshalECPrivateKey(key)))
	writePEM(t, pub, "PUBLIC KEY", must(x509.MarshalPKIXPublicKey(&key.PublicKey)))
	return key, "jwt,pub-key=" + pub + ",priv-key=" + priv + ",sign-method=ES256,ttl=10m"
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAuthOldRevision: a JWT names the auth revision it was issued at, so
// any change of users or roles makes it old. Concurrent requests that hit
// the old token share one new token.
func TestAuthOldRevision(t *testing.T) {
	_, tokenOpt := jwtKeys(t)
	m, root := authMember(t, "--auth-token", tokenOpt)
	var aliceTokens issuedTokens
	alice := userClient(t, m.Endpoint(), "alice", "alicepw", aliceTokens.dialOption())
	ctx := testCtx(t)
	must(alice.Put(ctx, "a/0", "v"))
	before := aliceTokens.count()
	must(root.RoleAdd(ctx, "other")) // a new auth revision
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = alice.Put(ctx, "a/1", "v") })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := aliceTokens.count() - before; n != 1 {
		t.Errorf("%d authentications for one old token", n)
	}
}

// TestAuthDirectToken: a JWT signed with the server's key is sent as it is;
// a rejected one is never replaced.
func TestAuthDirectToken(t *testing.T) {
	key, tokenOpt := jwtKeys(t)
	m, root := authMember(t, "--auth-token", tokenOpt)
	ctx := testCtx(t)
	rev := must(root.AuthStatus(ctx)).AuthRevision
	sign := func(exp time.Time) string {
		claims := jwt.MapClaims{"username": "alice", "revision": rev, "exp": exp.Unix()}
		return must(jwt.NewWithClaims(jwt.SigningMethodES256, claims).SignedString(key))
	}
	tokenClient := func(token string) *client.Client {
		return harness.CairnClient(t, client.Config{Endpoints: []string{m.Endpoint()}, DialTimeout: 5 * time.Second, Token: token})
	}

	good := tokenClient(sign(time.Now().Add(time.Hour)))
	must(good.Put(ctx, "a/1", "v"))
	_, err := good.Put(ctx, "b", "v")
	wantErr(t, "put outside the grant", err, rpctypes.ErrPermissionDenied)

	valid := sign(time.Now().Add(time.Hour))
	tampered := []byte(valid)
	i := strings.LastIndexByte(valid, '.') + 5 // inside the signature
	if tampered[i] == 'A' {
		tampered[i] = 'B'
	} else {
		tampered[i] = 'A'
	}
	for name, token := range map[string]string{"expired": sign(time.Now().Add(-time.Hour)), "tampered": string(tampered)} {
		_, err := tokenClient(token).Get(ctx, "a/1")
		wantErr(t, name, err, rpctypes.ErrInvalidAuthToken)
	}

	_, err = client.New(client.Config{Endpoints: []string{m.Endpoint()}, Token: valid, Username: "alice"})
	wantErr(t, "token and username", err, client.ErrMutuallyExclusiveCfg)
}
