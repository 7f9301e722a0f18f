package auth

import (
	"os"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/goleak"
	"golang.org/x/crypto/bcrypt"

	"github.com/cairnkv/cairn/pkg/fakeclock"
	"github.com/cairnkv/cairn/server/storage/backend"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) {
		if keysDir != "" {
			_ = os.RemoveAll(keysDir)
		}
	}))
}

// testCost keeps bcrypt fast in tests.
const testCost = bcrypt.MinCost

// fakeClock moves only when told.
type fakeClock = fakeclock.Clock

func newFakeClock() *fakeClock { return fakeclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

// newStore opens a store on a fresh backend; the backend is closed when
// the test ends.
func newStore(t *testing.T, tokens TokenProvider) (*Store, backend.Backend, string) {
	t.Helper()
	be, path := newTmpBackend(t)
	return New(Config{Backend: be, Tokens: tokens, BcryptCost: testCost}), be, path
}

// reopen commits and closes be, then opens the file again with a new store:
// what the store sees is what reached the disk.
func reopen(t *testing.T, be backend.Backend, path string) (*Store, backend.Backend) {
	t.Helper()
	be.Commit()
	if err := be.Close(); err != nil {
		t.Fatal(err)
	}
	be2, err := backend.Open(backend.Config{Path: path, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = be2.Close() })
	return New(Config{Backend: be2, BcryptCost: testCost}), be2
}

// ok fails the test on an error: ok(t)(s.UserAdd(r)).
func ok(t *testing.T) func(any, error) {
	return func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func userRoles(t *testing.T, s *Store, name string) []string {
	t.Helper()
	resp, err := s.UserGet(&pb.AuthUserGetRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Roles
}

func rolePerms(t *testing.T, s *Store, role string) []*authpb.Permission {
	t.Helper()
	resp, err := s.RoleGet(&pb.AuthRoleGetRequest{Role: role})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Perm
}

func hash(t *testing.T, password string) string {
	t.Helper()
	h, err := GenerateHash(password, testCost)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func addUser(t *testing.T, s *Store, name, password string, roles ...string) {
	t.Helper()
	r := &pb.AuthUserAddRequest{Name: name, Password: password}
	if err := HashUserAdd(r, testCost); err != nil {
		t.Fatal(err)
	}
	ok(t)(s.UserAdd(r))
	for _, role := range roles {
		ok(t)(s.UserGrantRole(&pb.AuthUserGrantRoleRequest{User: name, Role: role}))
	}
}

func addRole(t *testing.T, s *Store, name string, perms ...*pb.AuthRoleGrantPermissionRequest) {
	t.Helper()
	ok(t)(s.RoleAdd(&pb.AuthRoleAddRequest{Name: name}))
	for _, p := range perms {
		p.Name = name
		ok(t)(s.RoleGrantPermission(p))
	}
}

// enableWithRoot creates root (password "rootpw") with the root role and
// enables auth.
func enableWithRoot(t *testing.T, s *Store) {
	t.Helper()
	addRole(t, s, rootRole)
	addUser(t, s, rootUser, "rootpw", rootRole)
	if err := s.AuthEnable(); err != nil {
		t.Fatal(err)
	}
}

func newTmpBackend(t *testing.T) (backend.Backend, string) { return backend.NewTmpBackend(t) }
