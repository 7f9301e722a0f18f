package etcdserver

import (
	"context"
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/metadata"

	"github.com/cairnkv/cairn/server/auth"
)

// authConfig is testConfig with simple tokens and the cheapest bcrypt.
func authConfig(dir string) *Config {
	cfg := testConfig(dir)
	cfg.AuthToken, cfg.BcryptCost, cfg.AuthTokenTTL = "simple", 4, 300
	return cfg
}

// withToken is ctx as a gRPC request carrying token.
func withToken(ctx context.Context, token string) context.Context {
	return metadata.NewIncomingContext(ctx, metadata.Pairs("token", token))
}

// setupAuth makes root and alice (read/write on [a, b)), turns auth on and
// returns both users' tokens.
func setupAuth(t *testing.T, s *Server) (rootTok, aliceTok string) {
	t.Helper()
	ctx := testCtx(t)
	steps := []func() error{
		func() error {
			_, err := s.AuthAdmin().UserAdd(ctx, &pb.AuthUserAddRequest{Name: "root", Password: "r"})
			return err
		},
		func() error {
			_, err := s.AuthAdmin().UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: "root", Role: "root"})
			return err
		},
		func() error {
			_, err := s.AuthAdmin().UserAdd(ctx, &pb.AuthUserAddRequest{Name: "alice", Password: "a"})
			return err
		},
		func() error { _, err := s.AuthAdmin().RoleAdd(ctx, &pb.AuthRoleAddRequest{Name: "app"}); return err },
		func() error {
			perm := &authpb.Permission{PermType: authpb.READWRITE, Key: []byte("a"), RangeEnd: []byte("b")}
			_, err := s.AuthAdmin().RoleGrantPermission(ctx, &pb.AuthRoleGrantPermissionRequest{Name: "app", Perm: perm})
			return err
		},
		func() error {
			_, err := s.AuthAdmin().UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: "alice", Role: "app"})
			return err
		},
		func() error { _, err := s.AuthAdmin().AuthEnable(ctx, &pb.AuthEnableRequest{}); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("setup step %d: %v", i, err)
		}
	}
	return authenticate(t, s, "root", "r"), authenticate(t, s, "alice", "a")
}

func authenticate(t *testing.T, s *Server, user, password string) string {
	t.Helper()
	resp, err := s.AuthAdmin().Authenticate(testCtx(t), &pb.AuthenticateRequest{Name: user, Password: password})
	if err != nil {
		t.Fatalf("authenticate %s: %v", user, err)
	}
	return resp.Token
}

func TestAuthChecksWritesAndReads(t *testing.T) {
	s := startServer(t, authConfig(t.TempDir()))
	_, alice := setupAuth(t, s)
	ctx := withToken(testCtx(t), alice)
	if _, err := s.KV().Put(ctx, &pb.PutRequest{Key: []byte("a1"), Value: []byte("v")}); err != nil {
		t.Fatalf("put inside: %v", err)
	}
	if _, err := s.KV().Put(ctx, &pb.PutRequest{Key: []byte("c"), Value: []byte("v")}); !errors.Is(err, auth.ErrPermissionDenied) {
		t.Fatalf("put outside: %v", err)
	}
	for _, serializable := range []bool{false, true} {
		_, err := s.KV().Range(ctx, &pb.RangeRequest{Key: []byte("c"), Serializable: serializable})
		if !errors.Is(err, auth.ErrPermissionDenied) {
			t.Errorf("range outside (serializable %v): %v", serializable, err)
		}
	}
	if _, err := s.KV().Range(testCtx(t), &pb.RangeRequest{Key: []byte("a1")}); !errors.Is(err, auth.ErrUserEmpty) {
		t.Errorf("range without token: %v", err)
	}
	if _, err := s.KV().Range(withToken(testCtx(t), "bogus.1"), &pb.RangeRequest{Key: []byte("a1")}); !errors.Is(err, auth.ErrInvalidAuthToken) {
		t.Errorf("range with a bogus token: %v", err)
	}
	txn := &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("c")}}}}}
	if _, err := s.KV().Txn(ctx, txn); !errors.Is(err, auth.ErrPermissionDenied) {
		t.Errorf("read-only txn outside: %v", err)
	}
}

func TestAuthAdminRequests(t *testing.T) {
	s := startServer(t, authConfig(t.TempDir()))
	root, alice := setupAuth(t, s)
	_, err := s.AuthAdmin().UserList(withToken(testCtx(t), alice), &pb.AuthUserListRequest{})
	if !errors.Is(err, auth.ErrPermissionDenied) {
		t.Fatalf("user list as alice: %v", err)
	}
	if err := s.AdminPermitted(withToken(testCtx(t), alice)); !errors.Is(err, auth.ErrPermissionDenied) {
		t.Errorf("AdminPermitted(alice) = %v", err)
	}
	resp, err := s.AuthAdmin().UserList(withToken(testCtx(t), root), &pb.AuthUserListRequest{})
	if err != nil || len(resp.Users) != 2 {
		t.Fatalf("user list as root: %v %v", resp, err)
	}
	// AuthStatus answers without a token, but like etcd v3.7.3 refuses an
	// invalid one.
	st, err := s.AuthAdmin().AuthStatus(testCtx(t), &pb.AuthStatusRequest{})
	if err != nil || !st.Enabled {
		t.Fatalf("auth status without a token: %v %v", st, err)
	}
	if _, err := s.AuthAdmin().AuthStatus(withToken(testCtx(t), "bogus.1"), &pb.AuthStatusRequest{}); !errors.Is(err, auth.ErrInvalidAuthToken) {
		t.Fatalf("auth status with an invalid token: %v, want %v", err, auth.ErrInvalidAuthToken)
	}
}

func TestAuthPasswordChangeDropsTokens(t *testing.T) {
	s := startServer(t, authConfig(t.TempDir()))
	root, alice := setupAuth(t, s)
	_, err := s.AuthAdmin().UserChangePassword(withToken(testCtx(t), root), &pb.AuthUserChangePasswordRequest{Name: "alice", Password: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.KV().Range(withToken(testCtx(t), alice), &pb.RangeRequest{Key: []byte("a1")}); !errors.Is(err, auth.ErrInvalidAuthToken) {
		t.Errorf("old token: %v", err)
	}
	if _, err := s.AuthAdmin().Authenticate(testCtx(t), &pb.AuthenticateRequest{Name: "alice", Password: "a"}); !errors.Is(err, auth.ErrAuthFailed) {
		t.Errorf("old password: %v", err)
	}
	authenticate(t, s, "alice", "new")
}

func TestAuthSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, authConfig(dir))
	setupAuth(t, s)
	s.Stop()
	s = startServer(t, authConfig(dir))
	if !s.AuthStore().IsAuthEnabled() {
		t.Fatal("auth is off after a restart")
	}
	alice := authenticate(t, s, "alice", "a")
	if _, err := s.KV().Put(withToken(testCtx(t), alice), &pb.PutRequest{Key: []byte("a2")}); err != nil {
		t.Fatalf("put after restart: %v", err)
	}
}

func TestBadAuthTokenOptionFailsStartup(t *testing.T) {
	cfg := authConfig(t.TempDir())
	cfg.AuthToken = "nope"
	if _, err := New(cfg); !errors.Is(err, auth.ErrInvalidAuthOpts) {
		t.Fatalf("New with --auth-token=nope: %v", err)
	}
}
