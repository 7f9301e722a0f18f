package auth

import (
	"errors"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// TestNameTooLong: user and role names that cannot be a backend key are
// refused (etcd crashes applying them); the longest allowed one works and
// survives a commit.
func TestNameTooLong(t *testing.T) {
	s, be, _ := newStore(t, nil)
	long, max := strings.Repeat("n", maxNameBytes+1), strings.Repeat("m", maxNameBytes)
	if _, err := s.RoleAdd(&pb.AuthRoleAddRequest{Name: long}); !errors.Is(err, ErrNameTooLong) {
		t.Fatalf("RoleAdd of %d bytes: %v, want %v", len(long), err, ErrNameTooLong)
	}
	if _, err := s.UserAdd(&pb.AuthUserAddRequest{Name: long, Options: &authpb.UserAddOptions{NoPassword: true}}); !errors.Is(err, ErrNameTooLong) {
		t.Fatalf("UserAdd of %d bytes: %v, want %v", len(long), err, ErrNameTooLong)
	}
	if _, err := s.RoleAdd(&pb.AuthRoleAddRequest{Name: max}); err != nil {
		t.Fatalf("RoleAdd of %d bytes: %v", len(max), err)
	}
	if _, err := s.UserAdd(&pb.AuthUserAddRequest{Name: max, Options: &authpb.UserAddOptions{NoPassword: true}}); err != nil {
		t.Fatalf("UserAdd of %d bytes: %v", len(max), err)
	}
	be.Commit()
	if r, err := s.RoleGet(&pb.AuthRoleGetRequest{Role: max}); err != nil || r == nil {
		t.Fatalf("RoleGet after commit: %v", err)
	}
}
