package auth

import (
	"context"
	"sync"
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// TestConcurrentReaders runs the API layer's calls while the apply step
// changes the state; run with -race.
func TestConcurrentReaders(t *testing.T) {
	s, _, _ := newSimpleStore(t, TokenConfig{})
	addRole(t, s, "r", perm(authpb.Permission_READ, "a", "z"))
	token := authenticate(t, s, "u", 1)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = s.IsRangePermitted(AuthInfo{"u", s.Revision()}, []byte("b"), nil)
				_ = s.IsAdminPermitted(AuthInfo{"u", s.Revision()})
				_, _ = s.AuthInfoFromToken(context.Background(), token)
				_, _ = s.CheckPassword("u", "pw")
				_, _ = s.UserGet(&pb.AuthUserGetRequest{Name: "u"})
			}
		})
	}
	for range 20 {
		ok(t)(s.UserGrantRole(&pb.AuthUserGrantRoleRequest{User: "u", Role: "r"}))
		ok(t)(s.UserRevokeRole(&pb.AuthUserRevokeRoleRequest{Name: "u", Role: "r"}))
		authenticate(t, s, "u", 2)
	}
	close(stop)
	wg.Wait()
}
