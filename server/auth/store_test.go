package auth

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/storage/backend"
)

func perm(typ authpb.Permission_Type, key, end string) *pb.AuthRoleGrantPermissionRequest {
	p := &authpb.Permission{PermType: typ, Key: []byte(key)}
	if end != "" {
		p.RangeEnd = []byte(end)
	}
	return &pb.AuthRoleGrantPermissionRequest{Perm: p}
}

func TestNewWritesInitialRevision(t *testing.T) {
	s, be, path := newStore(t, nil)
	if got := s.Revision(); got != 1 {
		t.Fatalf("revision of a fresh store = %d, want 1", got)
	}
	s2, _ := reopen(t, be, path)
	if enabled, rev := s2.AuthStatus(); enabled || rev != 1 {
		t.Fatalf("AuthStatus after reopen = %v, %d; want false, 1", enabled, rev)
	}
}

// TestRevisionBumps pins which operations bump the auth revision, as etcd.
func TestRevisionBumps(t *testing.T) {
	s, _, _ := newStore(t, nil)
	steps := []struct {
		name  string
		op    func() error
		delta uint64
	}{
		{"RoleAdd", errOf(s.RoleAdd, &pb.AuthRoleAddRequest{Name: "r"}), 1},
		{"RoleAdd root", errOf(s.RoleAdd, &pb.AuthRoleAddRequest{Name: rootRole}), 1},
		{"UserAdd", errOf(s.UserAdd, &pb.AuthUserAddRequest{Name: "u", HashedPassword: hash(t, "pw")}), 1},
		{"UserAdd root", errOf(s.UserAdd, &pb.AuthUserAddRequest{Name: rootUser, HashedPassword: hash(t, "pw")}), 1},
		{"UserGrantRole", errOf(s.UserGrantRole, &pb.AuthUserGrantRoleRequest{User: "u", Role: "r"}), 1},
		{"UserGrantRole again", errOf(s.UserGrantRole, &pb.AuthUserGrantRoleRequest{User: "u", Role: "r"}), 0},
		{"UserGrantRole root", errOf(s.UserGrantRole, &pb.AuthUserGrantRoleRequest{User: rootUser, Role: rootRole}), 1},
		{"RoleGrantPermission", errOf(s.RoleGrantPermission, &pb.AuthRoleGrantPermissionRequest{Name: "r", Perm: perm(authpb.Permission_READ, "a", "").Perm}), 1},
		{"RoleRevokePermission", errOf(s.RoleRevokePermission, &pb.AuthRoleRevokePermissionRequest{Role: "r", Key: []byte("a")}), 1},
		{"UserChangePassword", errOf(s.UserChangePassword, &pb.AuthUserChangePasswordRequest{Name: "u", HashedPassword: hash(t, "pw2")}), 1},
		{"AuthEnable", s.AuthEnable, 0},
		{"AuthEnable again", s.AuthEnable, 0},
		{"UserRevokeRole", errOf(s.UserRevokeRole, &pb.AuthUserRevokeRoleRequest{Name: "u", Role: "r"}), 1},
		{"UserDelete", errOf(s.UserDelete, &pb.AuthUserDeleteRequest{Name: "u"}), 1},
		{"RoleDelete", errOf(s.RoleDelete, &pb.AuthRoleDeleteRequest{Role: "r"}), 1},
		{"failed RoleDelete", errOf(s.RoleDelete, &pb.AuthRoleDeleteRequest{Role: "r"}), 0},
		{"AuthDisable", func() error { s.AuthDisable(); return nil }, 1},
		{"AuthDisable again", func() error { s.AuthDisable(); return nil }, 0},
	}
	for _, st := range steps {
		before := s.Revision()
		err := st.op()
		if st.name != "failed RoleDelete" && err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := s.Revision() - before; got != st.delta {
			t.Errorf("%s bumped the revision by %d, want %d", st.name, got, st.delta)
		}
	}
}

func errOf[Req, Resp any](f func(Req) (Resp, error), r Req) func() error {
	return func() error { _, err := f(r); return err }
}

func TestAuthEnableRootRules(t *testing.T) {
	s, _, _ := newStore(t, nil)
	if err := s.AuthEnable(); !errors.Is(err, ErrRootUserNotExist) {
		t.Fatalf("AuthEnable without root = %v, want %v", err, ErrRootUserNotExist)
	}
	addUser(t, s, rootUser, "pw")
	if err := s.AuthEnable(); !errors.Is(err, ErrRootRoleNotExist) {
		t.Fatalf("AuthEnable with root lacking the root role = %v, want %v", err, ErrRootRoleNotExist)
	}
	// The root role may be granted before it exists.
	ok(t)(s.UserGrantRole(&pb.AuthUserGrantRoleRequest{User: rootUser, Role: rootRole}))
	if err := s.AuthEnable(); err != nil {
		t.Fatal(err)
	}
	if !s.IsAuthEnabled() {
		t.Fatal("auth not enabled")
	}
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"delete root user", errOf(s.UserDelete, &pb.AuthUserDeleteRequest{Name: rootUser})(), ErrInvalidAuthMgmt},
		{"revoke root role from root", errOf(s.UserRevokeRole, &pb.AuthUserRevokeRoleRequest{Name: rootUser, Role: rootRole})(), ErrInvalidAuthMgmt},
		{"delete root role", errOf(s.RoleDelete, &pb.AuthRoleDeleteRequest{Role: rootRole})(), ErrInvalidAuthMgmt},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, tt.err, tt.want)
		}
	}
	s.AuthDisable()
	// With auth off the root rules no longer apply.
	ok(t)(s.UserRevokeRole(&pb.AuthUserRevokeRoleRequest{Name: rootUser, Role: rootRole}))
	ok(t)(s.UserDelete(&pb.AuthUserDeleteRequest{Name: rootUser}))
}

func TestOperationErrors(t *testing.T) {
	s, _, _ := newStore(t, nil)
	addRole(t, s, "r")
	addUser(t, s, "u", "pw", "r")
	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"UserAdd empty", errOf(s.UserAdd, &pb.AuthUserAddRequest{}), ErrUserEmpty},
		{"UserAdd exists", errOf(s.UserAdd, &pb.AuthUserAddRequest{Name: "u"}), ErrUserAlreadyExist},
		{"UserAdd bad hash", errOf(s.UserAdd, &pb.AuthUserAddRequest{Name: "v", HashedPassword: "!!"}), ErrNoPasswordUser},
		{"UserDelete missing", errOf(s.UserDelete, &pb.AuthUserDeleteRequest{Name: "x"}), ErrUserNotFound},
		{"UserChangePassword missing", errOf(s.UserChangePassword, &pb.AuthUserChangePasswordRequest{Name: "x"}), ErrUserNotFound},
		{"UserGrantRole no user", errOf(s.UserGrantRole, &pb.AuthUserGrantRoleRequest{User: "x", Role: "r"}), ErrUserNotFound},
		{"UserGrantRole no role", errOf(s.UserGrantRole, &pb.AuthUserGrantRoleRequest{User: "u", Role: "x"}), ErrRoleNotFound},
		{"UserRevokeRole no user", errOf(s.UserRevokeRole, &pb.AuthUserRevokeRoleRequest{Name: "x", Role: "r"}), ErrUserNotFound},
		{"UserRevokeRole not granted", errOf(s.UserRevokeRole, &pb.AuthUserRevokeRoleRequest{Name: "u", Role: "x"}), ErrRoleNotGranted},
		{"UserGet missing", errOf(s.UserGet, &pb.AuthUserGetRequest{Name: "x"}), ErrUserNotFound},
		{"RoleAdd empty", errOf(s.RoleAdd, &pb.AuthRoleAddRequest{}), ErrRoleEmpty},
		{"RoleAdd exists", errOf(s.RoleAdd, &pb.AuthRoleAddRequest{Name: "r"}), ErrRoleAlreadyExist},
		{"RoleDelete missing", errOf(s.RoleDelete, &pb.AuthRoleDeleteRequest{Role: "x"}), ErrRoleNotFound},
		{"RoleGet missing", errOf(s.RoleGet, &pb.AuthRoleGetRequest{Role: "x"}), ErrRoleNotFound},
		{"grant no perm", errOf(s.RoleGrantPermission, &pb.AuthRoleGrantPermissionRequest{Name: "r"}), ErrPermissionNotGiven},
		{"grant empty key", errOf(s.RoleGrantPermission, &pb.AuthRoleGrantPermissionRequest{Name: "r", Perm: &authpb.Permission{}}), ErrInvalidAuthMgmt},
		{"grant inverted range", errOf(s.RoleGrantPermission, &pb.AuthRoleGrantPermissionRequest{Name: "r", Perm: &authpb.Permission{Key: []byte("b"), RangeEnd: []byte("a")}}), ErrInvalidAuthMgmt},
		{"grant empty range", errOf(s.RoleGrantPermission, &pb.AuthRoleGrantPermissionRequest{Name: "r", Perm: &authpb.Permission{Key: []byte("a"), RangeEnd: []byte("a")}}), ErrInvalidAuthMgmt},
		{"grant no role", errOf(s.RoleGrantPermission, &pb.AuthRoleGrantPermissionRequest{Name: "x", Perm: &authpb.Permission{Key: []byte("a")}}), ErrRoleNotFound},
		{"revoke no role", errOf(s.RoleRevokePermission, &pb.AuthRoleRevokePermissionRequest{Role: "x", Key: []byte("a")}), ErrRoleNotFound},
		{"revoke not granted", errOf(s.RoleRevokePermission, &pb.AuthRoleRevokePermissionRequest{Role: "r", Key: []byte("a")}), ErrPermissionNotGranted},
		{"Authenticate disabled", errOf(func(r *pb.InternalAuthenticateRequest) (*pb.AuthenticateResponse, error) { return s.Authenticate(r, 1) }, &pb.InternalAuthenticateRequest{Name: "u"}), ErrAuthNotEnabled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.Revision()
			if err := tt.op(); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if s.Revision() != before {
				t.Fatal("a failed operation bumped the revision")
			}
		})
	}
}

// TestPersistence runs every kind of change, reopens the backend after a
// commit and checks what a new store loads, and the raw encodings.
func TestPersistence(t *testing.T) {
	s, be, path := newStore(t, nil)
	addRole(t, s, "reader", perm(authpb.Permission_READ, "b", "c"), perm(authpb.Permission_WRITE, "a", ""))
	addRole(t, s, "gone")
	addRole(t, s, "temp", perm(authpb.Permission_READ, "x", ""))
	ok(t)(s.RoleRevokePermission(&pb.AuthRoleRevokePermissionRequest{Role: "temp", Key: []byte("x")}))
	addUser(t, s, "alice", "pw", "reader", "gone", "temp")
	ok(t)(s.UserRevokeRole(&pb.AuthUserRevokeRoleRequest{Name: "alice", Role: "temp"}))
	ok(t)(s.RoleDelete(&pb.AuthRoleDeleteRequest{Role: "gone"}))
	ok(t)(s.UserAdd(&pb.AuthUserAddRequest{Name: "nopw", Options: &authpb.UserAddOptions{NoPassword: true}}))
	addUser(t, s, "bob", "old")
	ok(t)(s.UserChangePassword(&pb.AuthUserChangePasswordRequest{Name: "bob", HashedPassword: hash(t, "new")}))
	addUser(t, s, "carol", "pw")
	ok(t)(s.UserDelete(&pb.AuthUserDeleteRequest{Name: "carol"}))
	enableWithRoot(t, s)
	wantRev := s.Revision()

	s2, be2 := reopen(t, be, path)
	if enabled, rev := s2.AuthStatus(); !enabled || rev != wantRev {
		t.Fatalf("AuthStatus = %v, %d; want true, %d", enabled, rev, wantRev)
	}
	users := userList(t, s2)
	if want := []string{"alice", "bob", "nopw", rootUser}; !slices.Equal(users, want) {
		t.Errorf("users = %q, want %q", users, want)
	}
	roles := roleList(t, s2)
	if want := []string{"reader", rootRole, "temp"}; !slices.Equal(roles, want) {
		t.Errorf("roles = %q, want %q", roles, want)
	}
	if got := userRoles(t, s2, "alice"); !slices.Equal(got, []string{"reader"}) {
		t.Errorf("alice's roles = %q", got)
	}
	if got := rolePerms(t, s2, "temp"); len(got) != 0 {
		t.Errorf("temp's perms = %v", got)
	}
	if _, err := s2.CheckPassword("bob", "new"); err != nil {
		t.Errorf("bob's new password: %v", err)
	}
	checkRawEncoding(t, be2, wantRev)
}

// checkRawEncoding reads the buckets directly: etcd's layout and values.
func checkRawEncoding(t *testing.T, be backend.Backend, wantRev uint64) {
	t.Helper()
	tx := be.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	_, vals := tx.UnsafeRange(backend.BucketAuth, []byte("authEnabled"), nil, 0)
	if len(vals) != 1 || len(vals[0]) != 1 || vals[0][0] != 1 {
		t.Errorf("authEnabled = %v, want [1]", vals)
	}
	_, vals = tx.UnsafeRange(backend.BucketAuth, []byte("authRevision"), nil, 0)
	if len(vals) != 1 || len(vals[0]) != 8 || binary.BigEndian.Uint64(vals[0]) != wantRev {
		t.Errorf("authRevision = %v, want 8 bytes big endian %d", vals, wantRev)
	}
	_, vals = tx.UnsafeRange(backend.BucketAuthRoles, []byte("reader"), nil, 0)
	want := &authpb.Role{Name: []byte("reader"), KeyPermission: []*authpb.Permission{
		{PermType: authpb.Permission_WRITE, Key: []byte("a")},
		{PermType: authpb.Permission_READ, Key: []byte("b"), RangeEnd: []byte("c")},
	}}
	if len(vals) != 1 || !slices.Equal(vals[0], marshal(t, want)) {
		t.Errorf("role record = %x, want %x", vals, marshal(t, want))
	}
	_, vals = tx.UnsafeRange(backend.BucketAuthUsers, []byte("nopw"), nil, 0)
	wantUser := &authpb.User{Name: []byte("nopw"), Options: &authpb.UserAddOptions{NoPassword: true}}
	if len(vals) != 1 || !slices.Equal(vals[0], marshal(t, wantUser)) {
		t.Errorf("user record = %x, want %x", vals, marshal(t, wantUser))
	}
}

func TestAuthDisablePersists(t *testing.T) {
	s, be, path := newStore(t, nil)
	enableWithRoot(t, s)
	s.AuthDisable()
	s2, _ := reopen(t, be, path)
	if s2.IsAuthEnabled() {
		t.Fatal("auth enabled after disable and reopen")
	}
}

func TestRecover(t *testing.T) {
	s, _, _ := newStore(t, nil)
	other, _, _ := newStore(t, nil)
	enableWithRoot(t, other)
	addRole(t, other, "r", perm(authpb.Permission_READ, "k", ""))
	addUser(t, other, "u", "pw", "r")
	s.Recover(other.backend())
	if !s.IsAuthEnabled() || s.Revision() != other.Revision() {
		t.Fatalf("after Recover: enabled %v, revision %d; want true, %d", s.IsAuthEnabled(), s.Revision(), other.Revision())
	}
	if err := s.IsRangePermitted(AuthInfo{"u", s.Revision()}, []byte("k"), nil); err != nil {
		t.Fatalf("permission after Recover: %v", err)
	}
}

func TestRoleGrantPermissionMerging(t *testing.T) {
	s, _, _ := newStore(t, nil)
	addRole(t, s, "r")
	grant := func(typ authpb.Permission_Type, key, end string) {
		p := perm(typ, key, end)
		p.Name = "r"
		ok(t)(s.RoleGrantPermission(p))
	}
	grant(authpb.Permission_READ, "m", "")
	grant(authpb.Permission_READ, "a", "b")
	grant(authpb.Permission_WRITE, "m", "") // same key and end: type replaced
	grant(authpb.Permission_READ, "m", "n") // same key, other end: added after
	grant(authpb.Permission_READWRITE, "z", "\x00")
	got := rolePerms(t, s, "r")
	want := []*authpb.Permission{
		{PermType: authpb.Permission_READ, Key: []byte("a"), RangeEnd: []byte("b")},
		{PermType: authpb.Permission_WRITE, Key: []byte("m")},
		{PermType: authpb.Permission_READ, Key: []byte("m"), RangeEnd: []byte("n")},
		{PermType: authpb.Permission_READWRITE, Key: []byte("z"), RangeEnd: []byte{0}},
	}
	if !permsEqual(got, want) {
		t.Fatalf("perms = %v, want %v", got, want)
	}
	// etcd compares only the first permission of a key: re-granting [m, n)
	// adds a duplicate, and revoking removes both.
	grant(authpb.Permission_READ, "m", "n")
	if got := rolePerms(t, s, "r"); len(got) != 5 {
		t.Fatalf("after re-grant: %d perms, want 5", len(got))
	}
	ok(t)(s.RoleRevokePermission(&pb.AuthRoleRevokePermissionRequest{Role: "r", Key: []byte("m"), RangeEnd: []byte("n")}))
	if got := rolePerms(t, s, "r"); len(got) != 3 {
		t.Fatalf("after revoke: %d perms, want 3", len(got))
	}
}

func permsEqual(a, b []*authpb.Permission) bool {
	return slices.EqualFunc(a, b, func(x, y *authpb.Permission) bool { return proto.Equal(x, y) })
}

func TestRoleGetRoot(t *testing.T) {
	s, _, _ := newStore(t, nil)
	addRole(t, s, rootRole, perm(authpb.Permission_READ, "a", ""))
	got := rolePerms(t, s, rootRole)
	if !permsEqual(got, []*authpb.Permission{rootPermission()}) {
		t.Fatalf("root perms = %v", got)
	}
}

func TestRoleDeleteRevokesFromUsers(t *testing.T) {
	s, _, _ := newStore(t, nil)
	addRole(t, s, "a")
	addRole(t, s, "b")
	addUser(t, s, "u1", "pw", "a", "b")
	addUser(t, s, "u2", "pw", "a")
	ok(t)(s.RoleDelete(&pb.AuthRoleDeleteRequest{Role: "a"}))
	for user, want := range map[string][]string{"u1": {"b"}, "u2": nil} {
		if got := userRoles(t, s, user); !slices.Equal(got, want) {
			t.Errorf("%s roles = %q, want %q", user, got, want)
		}
	}
	if !s.HasRole("u1", "b") || s.HasRole("u2", "a") || s.HasRole("nobody", "b") {
		t.Error("HasRole disagrees with UserGet")
	}
}

func TestUserGrantRoleKeepsRolesSorted(t *testing.T) {
	s, _, _ := newStore(t, nil)
	for _, r := range []string{"c", "a", "b"} {
		addRole(t, s, r)
	}
	addUser(t, s, "u", "pw", "c", "a", "b")
	if got := userRoles(t, s, "u"); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("roles = %q", got)
	}
}

func TestGRPCErrors(t *testing.T) {
	for err, grpcErr := range GRPCErrors {
		// etcd's status texts replace "auth: " with "etcdserver: " and some
		// wording; every entry must at least be a status error.
		if grpcErr == nil || grpcErr.Error() == "" {
			t.Errorf("%v maps to %v", err, grpcErr)
		}
	}
	if _, ok := GRPCErrors[ErrNoPasswordUser]; ok {
		t.Error("ErrNoPasswordUser must reach clients as codes.Unknown, as in etcd")
	}
	if got := GRPCErrors[ErrAuthOldRevision].Error(); got != "rpc error: code = InvalidArgument desc = etcdserver: revision of auth store is old" {
		t.Errorf("ErrAuthOldRevision maps to %q", got)
	}
}

func userList(t *testing.T, s *Store) []string {
	t.Helper()
	resp, err := s.UserList(&pb.AuthUserListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Users
}

func roleList(t *testing.T, s *Store) []string {
	t.Helper()
	resp, err := s.RoleList(&pb.AuthRoleListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Roles
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
