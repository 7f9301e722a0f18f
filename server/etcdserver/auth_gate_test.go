package etcdserver

import (
	"context"
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/auth"
	"github.com/cairnkv/cairn/server/lease"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// newTestGate is an authGate over a fresh auth store on a temporary
// backend, with auth enabled (root exists) when enabled is set.
func newTestGate(t *testing.T, enabled bool) *authGate {
	be, _ := backend.NewTmpBackend(t)
	tp, err := auth.NewTokenProvider("simple", auth.TokenConfig{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	st := auth.New(auth.Config{Backend: be, Tokens: tp, Logger: zap.NewNop()})
	if enabled {
		noPassword := &authpb.UserAddOptions{NoPassword: true}
		steps := []error{
			second(st.UserAdd(&pb.AuthUserAddRequest{Name: "root", Options: noPassword})),
			second(st.RoleAdd(&pb.AuthRoleAddRequest{Name: "root"})),
			second(st.UserGrantRole(&pb.AuthUserGrantRoleRequest{User: "root", Role: "root"})),
			st.AuthEnable(),
		}
		if err := errors.Join(steps...); err != nil {
			t.Fatal(err)
		}
	}
	return &authGate{store: st}
}

func second[T any](_ T, err error) error { return err }

func TestAuthGateWithAuthOff(t *testing.T) {
	g := newTestGate(t, false)
	ctx := context.Background()
	if err := errors.Join(g.RequireAuthInfo(ctx), g.AdminPermitted(ctx), g.IsWatchPermitted(ctx, []byte("a"), nil),
		g.leaseKeysPermitted(ctx, []*lease.Lease{nil}, true)); err != nil {
		t.Fatalf("a request without a user with auth off: %v", err)
	}
	r := &pb.InternalRaftRequest{Header: &pb.RequestHeader{}}
	if err := g.stampAuth(ctx, r); err != nil || r.Header.Username != "" {
		t.Fatalf("stamp with auth off: %v, user %q; want none", err, r.Header.Username)
	}
}

func TestAuthGateWithAuthOn(t *testing.T) {
	g := newTestGate(t, true)
	anon := context.Background()
	if err := g.RequireAuthInfo(anon); !errors.Is(err, auth.ErrUserEmpty) {
		t.Fatalf("RequireAuthInfo without a user: %v, want ErrUserEmpty", err)
	}
	if err := g.leaseKeysPermitted(anon, nil, false); !errors.Is(err, auth.ErrUserEmpty) {
		t.Fatalf("lease keys without a user: %v, want ErrUserEmpty", err)
	}
	if err := g.AdminPermitted(anon); err == nil {
		t.Fatal("an anonymous request passed as admin")
	}
	// The member's own requests act as root.
	self := withRoot(anon)
	if err := errors.Join(g.RequireAuthInfo(self), g.AdminPermitted(self), g.leaseKeysPermitted(self, nil, true)); err != nil {
		t.Fatalf("the member's own request: %v", err)
	}
	r := &pb.InternalRaftRequest{Header: &pb.RequestHeader{}}
	if err := g.stampAuth(self, r); err != nil || r.Header.Username != "root" || r.Header.AuthRevision == 0 {
		t.Fatalf("stamp of the member's own request: %v, header %v; want root at the current revision", err, r.Header)
	}
}
