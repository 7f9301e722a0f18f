package auth

import (
	"encoding/base64"
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"golang.org/x/crypto/bcrypt"
)

func TestCheckPassword(t *testing.T) {
	s, _, _ := newStore(t, nil)
	addUser(t, s, "u", "pw")
	if _, err := s.CheckPassword("u", "pw"); !errors.Is(err, ErrAuthNotEnabled) {
		t.Fatalf("CheckPassword with auth disabled = %v, want %v", err, ErrAuthNotEnabled)
	}
	enableWithRoot(t, s)
	ok(t)(s.UserAdd(&pb.AuthUserAddRequest{Name: "nopw", Options: &authpb.UserAddOptions{NoPassword: true}}))
	tests := []struct {
		user, password string
		want           error
	}{
		{"u", "pw", nil},
		{"u", "wrong", ErrAuthFailed},
		{"u", "", ErrAuthFailed},
		{"ghost", "pw", ErrAuthFailed},
		{"nopw", "", ErrNoPasswordUser},
		{"nopw", "anything", ErrNoPasswordUser},
	}
	for _, tt := range tests {
		rev, err := s.CheckPassword(tt.user, tt.password)
		if !errors.Is(err, tt.want) {
			t.Errorf("CheckPassword(%q, %q) = %v, want %v", tt.user, tt.password, err, tt.want)
		}
		if err == nil && rev != s.Revision() {
			t.Errorf("CheckPassword(%q) revision = %d, want %d", tt.user, rev, s.Revision())
		}
	}
	if ErrNoPasswordUser.Error() != "auth: authentication failed, password was given for no password user" {
		t.Errorf("ErrNoPasswordUser text = %q", ErrNoPasswordUser)
	}
}

// TestCheckPasswordRevisionRace: a password change between the check and
// the Authenticate entry moves the revision, which the API layer sees.
func TestCheckPasswordRevisionRace(t *testing.T) {
	s, _, _ := newStore(t, nil)
	enableWithRoot(t, s)
	addUser(t, s, "u", "old")
	checked, err := s.CheckPassword("u", "old")
	if err != nil {
		t.Fatal(err)
	}
	ok(t)(s.UserChangePassword(&pb.AuthUserChangePasswordRequest{Name: "u", HashedPassword: hash(t, "new")}))
	if checked == s.Revision() {
		t.Fatal("revision did not move: the API layer could not detect the stale check")
	}
	if _, err := s.CheckPassword("u", "old"); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("retried check with the old password = %v, want %v", err, ErrAuthFailed)
	}
}

func TestAuthenticateNoPasswordUser(t *testing.T) {
	s, _, _ := newStore(t, nil)
	enableWithRoot(t, s)
	ok(t)(s.UserAdd(&pb.AuthUserAddRequest{Name: "nopw", Options: &authpb.UserAddOptions{NoPassword: true}}))
	for _, name := range []string{"nopw", "ghost"} {
		if _, err := s.Authenticate(&pb.InternalAuthenticateRequest{Name: name}, 5); !errors.Is(err, ErrAuthFailed) {
			t.Errorf("Authenticate(%q) = %v, want %v", name, err, ErrAuthFailed)
		}
	}
	// A NoPassword user stays without one when its password is changed.
	ok(t)(s.UserChangePassword(&pb.AuthUserChangePasswordRequest{Name: "nopw", HashedPassword: hash(t, "pw")}))
	if _, err := s.CheckPassword("nopw", "pw"); !errors.Is(err, ErrNoPasswordUser) {
		t.Errorf("CheckPassword after change = %v, want %v", err, ErrNoPasswordUser)
	}
}

// TestLegacyPlainPassword: entries from etcd before v3.5 carry the password
// itself; the store hashes it at apply time.
func TestLegacyPlainPassword(t *testing.T) {
	s, _, _ := newStore(t, nil)
	enableWithRoot(t, s)
	ok(t)(s.UserAdd(&pb.AuthUserAddRequest{Name: "u", Password: "plain"}))
	if _, err := s.CheckPassword("u", "plain"); err != nil {
		t.Fatal(err)
	}
	ok(t)(s.UserChangePassword(&pb.AuthUserChangePasswordRequest{Name: "u", Password: "plain2"}))
	if _, err := s.CheckPassword("u", "plain2"); err != nil {
		t.Fatal(err)
	}
}

func TestGenerateHashCost(t *testing.T) {
	tests := []struct {
		cost, want int
		wantErr    bool
	}{
		{bcrypt.MinCost, bcrypt.MinCost, false},
		{5, 5, false},
		{bcrypt.MaxCost + 1, 0, true},
	}
	for _, tt := range tests {
		h, err := GenerateHash("pw", tt.cost)
		if (err != nil) != tt.wantErr {
			t.Fatalf("GenerateHash(cost %d) err = %v", tt.cost, err)
		}
		if err != nil {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := bcrypt.Cost(raw); got != tt.want {
			t.Errorf("GenerateHash(cost %d) hashed at %d, want %d", tt.cost, got, tt.want)
		}
		if bcrypt.CompareHashAndPassword(raw, []byte("pw")) != nil {
			t.Errorf("GenerateHash(cost %d) does not match its password", tt.cost)
		}
	}
}

// TestStoreBcryptCost: --bcrypt-cost outside [4, 31] falls back to 10.
func TestStoreBcryptCost(t *testing.T) {
	for given, want := range map[int]int{0: 10, 3: 10, 4: 4, 12: 12, 31: 31, 32: 10} {
		be, _ := newTmpBackend(t)
		if got := New(Config{Backend: be, BcryptCost: given}).BcryptCost(); got != want {
			t.Errorf("BcryptCost(%d) = %d, want %d", given, got, want)
		}
	}
}

func TestHashRequests(t *testing.T) {
	add := &pb.AuthUserAddRequest{Name: "u", Password: "pw"}
	if err := HashUserAdd(add, testCost); err != nil || add.Password != "" || add.HashedPassword == "" {
		t.Fatalf("HashUserAdd: err %v, request %v", err, add)
	}
	nopw := &pb.AuthUserAddRequest{Name: "u", Password: "pw", Options: &authpb.UserAddOptions{NoPassword: true}}
	if err := HashUserAdd(nopw, testCost); err != nil || nopw.HashedPassword != "" {
		t.Fatalf("HashUserAdd of a NoPassword user: err %v, request %v", err, nopw)
	}
	change := &pb.AuthUserChangePasswordRequest{Name: "u", Password: "pw"}
	if err := HashChangePassword(change, testCost); err != nil || change.Password != "" || change.HashedPassword == "" {
		t.Fatalf("HashChangePassword: err %v, request %v", err, change)
	}
	empty := &pb.AuthUserChangePasswordRequest{Name: "u"}
	if err := HashChangePassword(empty, testCost); err != nil || empty.HashedPassword != "" {
		t.Fatalf("HashChangePassword of an empty password: err %v, request %v", err, empty)
	}
}
