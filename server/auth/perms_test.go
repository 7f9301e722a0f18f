package auth

import (
	"errors"
	"math/rand/v2"
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// permStore: root, and "u" with a single key, a range, a prefix, a from-key
// range and overlapping/adjacent ranges; "nobody" has no roles.
func permStore(t *testing.T) *Store {
	t.Helper()
	s, _, _ := newStore(t, nil)
	enableWithRoot(t, s)
	addRole(t, s, "key", perm(authpb.Permission_READ, "k1", ""))
	addRole(t, s, "range", perm(authpb.Permission_READWRITE, "r1", "r5"))
	addRole(t, s, "prefix", perm(authpb.Permission_READ, "p/", "p0"))
	addRole(t, s, "fromkey", perm(authpb.Permission_WRITE, "w", "\x00"))
	addRole(t, s, "overlap",
		perm(authpb.Permission_READ, "o1", "o3"),
		perm(authpb.Permission_READ, "o3", "o5"), // adjacent
		perm(authpb.Permission_READ, "o2", "o4")) // overlapping
	addUser(t, s, "u", "pw", "key", "range", "prefix", "fromkey", "overlap")
	addUser(t, s, "nobody", "pw")
	return s
}

type permOp int

const (
	opRange permOp = iota
	opPut
	opDelete
)

func checkOp(s *Store, ai AuthInfo, op permOp, key, end string) error {
	var e []byte
	if end != "" {
		e = []byte(end)
	}
	switch op {
	case opPut:
		return s.IsPutPermitted(ai, []byte(key))
	case opDelete:
		return s.IsDeleteRangePermitted(ai, []byte(key), e)
	}
	return s.IsRangePermitted(ai, []byte(key), e)
}

func TestPermissionTable(t *testing.T) {
	s := permStore(t)
	u := AuthInfo{"u", s.Revision()}
	root := AuthInfo{rootUser, s.Revision()}
	tests := []struct {
		name     string
		ai       AuthInfo
		op       permOp
		key, end string
		want     error
	}{
		{"single key read", u, opRange, "k1", "", nil},
		{"single key as range", u, opRange, "k1", "k1\x00", nil},
		{"other key", u, opRange, "k2", "", ErrPermissionDenied},
		{"range wider than key", u, opRange, "k1", "k2", ErrPermissionDenied},
		{"read-only key put", u, opPut, "k1", "", ErrPermissionDenied},

		{"whole range", u, opRange, "r1", "r5", nil},
		{"inside range", u, opRange, "r2", "r3", nil},
		{"starts before range", u, opRange, "r0", "r3", ErrPermissionDenied},
		{"ends after range", u, opRange, "r1", "r6", ErrPermissionDenied},
		{"put in range", u, opPut, "r4", "", nil},
		{"put at range end", u, opPut, "r5", "", ErrPermissionDenied},
		{"delete range", u, opDelete, "r1", "r5", nil},
		{"delete key in range", u, opDelete, "r1", "", nil},
		{"inverted range, begin permitted", u, opRange, "r3", "r2", nil},
		{"inverted range, begin denied", u, opRange, "k2", "k1", ErrPermissionDenied},

		{"whole prefix", u, opRange, "p/", "p0", nil},
		{"key in prefix", u, opRange, "p/a", "", nil},
		{"sub-prefix", u, opRange, "p/a", "p/b", nil},
		{"wider prefix", u, opRange, "p", "p0", ErrPermissionDenied},
		{"put in read-only prefix", u, opPut, "p/a", "", ErrPermissionDenied},

		{"from-key put", u, opPut, "w", "", nil},
		{"from-key put far", u, opPut, "zzz\xff", "", nil},
		{"from-key delete all", u, opDelete, "w", "\x00", nil},
		{"from-key delete later", u, opDelete, "x", "\x00", nil},
		{"from-key delete earlier", u, opDelete, "v", "\x00", ErrPermissionDenied},
		{"from-key delete bounded", u, opDelete, "x", "y", nil},
		{"write-only from-key read", u, opRange, "w", "", ErrPermissionDenied},

		{"merged overlapping", u, opRange, "o1", "o5", nil},
		{"merged overlapping key", u, opRange, "o4", "", nil},
		{"before merged", u, opRange, "o0", "o5", ErrPermissionDenied},
		{"after merged", u, opRange, "o5", "", ErrPermissionDenied},

		{"all keys for user", u, opRange, "\x00", "\x00", ErrPermissionDenied},
		{"all keys for root", root, opRange, "\x00", "\x00", nil},
		{"root put", root, opPut, "anything", "", nil},
		{"no roles", AuthInfo{"nobody", s.Revision()}, opRange, "k1", "", ErrPermissionDenied},
		{"unknown user", AuthInfo{"ghost", s.Revision()}, opRange, "k1", "", ErrPermissionDenied},
		{"no auth info", AuthInfo{}, opRange, "k1", "", ErrUserEmpty},
		{"old revision", AuthInfo{"u", s.Revision() - 1}, opRange, "k1", "", ErrAuthOldRevision},
		{"old revision root", AuthInfo{rootUser, 1}, opPut, "k", "", ErrAuthOldRevision},
		{"newer revision", AuthInfo{"u", s.Revision() + 1}, opRange, "k1", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkOp(s, tt.ai, tt.op, tt.key, tt.end); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestChecksPassWhenAuthDisabled(t *testing.T) {
	s, _, _ := newStore(t, nil)
	for _, op := range []permOp{opRange, opPut, opDelete} {
		if err := checkOp(s, AuthInfo{}, op, "k", ""); err != nil {
			t.Errorf("op %d with auth disabled: %v", op, err)
		}
	}
	if err := s.IsAdminPermitted(AuthInfo{}); err != nil {
		t.Errorf("IsAdminPermitted with auth disabled: %v", err)
	}
}

func TestIsAdminPermitted(t *testing.T) {
	s := permStore(t)
	tests := []struct {
		ai   AuthInfo
		want error
	}{
		{AuthInfo{rootUser, s.Revision()}, nil},
		{AuthInfo{rootUser, 1}, nil}, // no revision check, as in etcd
		{AuthInfo{"u", s.Revision()}, ErrPermissionDenied},
		{AuthInfo{"", s.Revision()}, ErrUserEmpty},
		{AuthInfo{"ghost", s.Revision()}, ErrUserNotFound},
	}
	for _, tt := range tests {
		if err := s.IsAdminPermitted(tt.ai); !errors.Is(err, tt.want) {
			t.Errorf("IsAdminPermitted(%v) = %v, want %v", tt.ai, err, tt.want)
		}
	}
}

// TestCacheInvalidation: every change reaches the checks at once.
func TestCacheInvalidation(t *testing.T) {
	s, _, _ := newStore(t, nil)
	enableWithRoot(t, s)
	addRole(t, s, "r", perm(authpb.Permission_READ, "a", ""))
	addUser(t, s, "u", "pw", "r")
	steps := []struct {
		name   string
		change func()
		want   error
	}{
		{"granted", func() {}, nil},
		{"permission revoked", func() {
			ok(t)(s.RoleRevokePermission(&pb.AuthRoleRevokePermissionRequest{Role: "r", Key: []byte("a")}))
		}, ErrPermissionDenied},
		{"permission granted again", func() {
			ok(t)(s.RoleGrantPermission(&pb.AuthRoleGrantPermissionRequest{Name: "r", Perm: perm(authpb.Permission_READ, "a", "").Perm}))
		}, nil},
		{"role revoked", func() {
			ok(t)(s.UserRevokeRole(&pb.AuthUserRevokeRoleRequest{Name: "u", Role: "r"}))
		}, ErrPermissionDenied},
		{"role granted again", func() {
			ok(t)(s.UserGrantRole(&pb.AuthUserGrantRoleRequest{User: "u", Role: "r"}))
		}, nil},
		{"role deleted", func() {
			ok(t)(s.RoleDelete(&pb.AuthRoleDeleteRequest{Role: "r"}))
		}, ErrPermissionDenied},
		{"root granted", func() {
			ok(t)(s.UserGrantRole(&pb.AuthUserGrantRoleRequest{User: "u", Role: rootRole}))
		}, nil},
		{"user deleted", func() {
			ok(t)(s.UserDelete(&pb.AuthUserDeleteRequest{Name: "u"}))
		}, ErrPermissionDenied},
		{"user re-added without roles", func() { addUser(t, s, "u", "pw") }, ErrPermissionDenied},
	}
	for _, st := range steps {
		st.change()
		if err := s.IsRangePermitted(AuthInfo{"u", s.Revision()}, []byte("a"), nil); !errors.Is(err, st.want) {
			t.Fatalf("%s: err = %v, want %v", st.name, err, st.want)
		}
	}
}

// TestRangeSetAgainstWalk compares the merged-interval check with a
// straightforward walk: from begin, keep jumping to the end of any interval
// that holds the current point.
func TestRangeSetAgainstWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"a", "aa", "ab", "b", "ba", "c", "ca", "d"}
	randIvl := func() interval {
		i, j := rng.IntN(len(keys)), rng.IntN(len(keys)+1)
		if j == len(keys) {
			return interval{begin: []byte(keys[i])} // open ended
		}
		if i > j {
			i, j = j, i
		}
		if i == j {
			return pointInterval([]byte(keys[i]))
		}
		return interval{begin: []byte(keys[i]), end: []byte(keys[j])}
	}
	for round := 0; round < 2000; round++ {
		ivs := make([]interval, rng.IntN(5))
		for i := range ivs {
			ivs[i] = randIvl()
		}
		set := newRangeSet(append([]interval(nil), ivs...))
		q := randIvl()
		if got, want := set.containsRange(q.begin, q.end), walkCovers(ivs, q); got != want {
			t.Fatalf("intervals %q query %q: containsRange = %v, walk = %v", ivs, q, got, want)
		}
	}
}

func walkCovers(ivs []interval, q interval) bool {
	cur := q.begin
	for affineCompare(cur, q.end) < 0 {
		next := cur
		for _, iv := range ivs {
			if affineCompare(iv.begin, cur) <= 0 && affineCompare(cur, iv.end) < 0 && affineCompare(iv.end, next) > 0 {
				next = iv.end
			}
		}
		if affineCompare(next, cur) == 0 {
			return false
		}
		cur = next
	}
	return true
}
