package auth

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func newSimpleStore(t *testing.T, cfg TokenConfig) (*Store, *simpleTokens, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	cfg.Clock = clock
	tp, err := NewTokenProvider("simple", cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := newStore(t, tp)
	enableWithRoot(t, s)
	addUser(t, s, "u", "pw")
	return s, tp.(*simpleTokens), clock
}

func authenticate(t *testing.T, s *Store, user string, index uint64) string {
	t.Helper()
	prefix, err := s.GenTokenPrefix()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Authenticate(&pb.InternalAuthenticateRequest{Name: user, SimpleToken: prefix}, index)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Token
}

func resolves(s *Store, token string) (string, bool) {
	ai, err := s.AuthInfoFromToken(context.Background(), token)
	if err != nil || ai == nil {
		return "", false
	}
	return ai.Username, true
}

func TestSimpleTokenFormat(t *testing.T) {
	s, _, _ := newSimpleStore(t, TokenConfig{})
	token := authenticate(t, s, "u", 42)
	if !regexp.MustCompile(`^[a-zA-Z]{16}\.42$`).MatchString(token) {
		t.Fatalf("token %q is not <16 letters>.<index>", token)
	}
	ai, err := s.AuthInfoFromToken(context.Background(), token)
	if err != nil || ai.Username != "u" || ai.Revision != s.Revision() {
		t.Fatalf("AuthInfoFromToken = %v, %v; want u at %d", ai, err, s.Revision())
	}
	// A simple token resolves to the store's current revision.
	addRole(t, s, "other")
	if ai, _ := s.AuthInfoFromToken(context.Background(), token); ai.Revision != s.Revision() {
		t.Fatalf("revision after a change = %d, want %d", ai.Revision, s.Revision())
	}
}

func TestSimpleTokenTTL(t *testing.T) {
	s, tp, clock := newSimpleStore(t, TokenConfig{SimpleTTL: 10 * time.Second})
	token := authenticate(t, s, "u", 1)
	steps := []struct {
		advance time.Duration
		valid   bool
	}{
		{9 * time.Second, true},  // used: extended to +10 s
		{10 * time.Second, true}, // exactly at expiry: still valid
		{10*time.Second + time.Nanosecond, false},
		{0, false}, // deleted, not revived
	}
	for i, st := range steps {
		clock.Advance(st.advance)
		if _, valid := resolves(s, token); valid != st.valid {
			t.Fatalf("step %d: valid = %v, want %v", i, valid, st.valid)
		}
	}
	if n := tokenCount(tp); n != 0 {
		t.Fatalf("%d tokens kept after expiry", n)
	}
}

func TestSimpleTokenDefaultTTL(t *testing.T) {
	s, _, clock := newSimpleStore(t, TokenConfig{})
	token := authenticate(t, s, "u", 1)
	clock.Advance(300 * time.Second)
	if _, valid := resolves(s, token); !valid {
		t.Fatal("token expired before 300 s")
	}
	clock.Advance(301 * time.Second)
	if _, valid := resolves(s, token); valid {
		t.Fatal("token valid after 300 s unused")
	}
}

// TestSimpleTokenSweep: expired tokens nobody asks about are dropped by a
// later Assign.
func TestSimpleTokenSweep(t *testing.T) {
	s, tp, clock := newSimpleStore(t, TokenConfig{SimpleTTL: 5 * time.Second})
	authenticate(t, s, "u", 1)
	authenticate(t, s, "u", 2)
	clock.Advance(6 * time.Second)
	authenticate(t, s, "u", 3)
	if n := tokenCount(tp); n != 1 {
		t.Fatalf("%d tokens after sweep, want 1", n)
	}
}

func tokenCount(tp *simpleTokens) int {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return len(tp.tokens)
}

func TestSimpleTokenInvalidation(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, s *Store)
	}{
		{"user deleted", func(t *testing.T, s *Store) {
			ok(t)(s.UserDelete(&pb.AuthUserDeleteRequest{Name: "u"}))
		}},
		{"password changed", func(t *testing.T, s *Store) {
			ok(t)(s.UserChangePassword(&pb.AuthUserChangePasswordRequest{Name: "u", HashedPassword: hash(t, "x")}))
		}},
		{"auth disabled and enabled", func(t *testing.T, s *Store) {
			s.AuthDisable()
			if err := s.AuthEnable(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, _ := newSimpleStore(t, TokenConfig{})
			token := authenticate(t, s, "u", 1)
			rootToken := authenticate(t, s, rootUser, 2)
			tt.change(t, s)
			if _, valid := resolves(s, token); valid {
				t.Fatal("token still valid")
			}
			_, rootValid := resolves(s, rootToken)
			if want := tt.name != "auth disabled and enabled"; rootValid != want {
				t.Fatalf("other user's token valid = %v, want %v", rootValid, want)
			}
		})
	}
}

func TestSimpleTokenWaitsForIndex(t *testing.T) {
	applied := make(chan struct{})
	waitIndex := func(index uint64) <-chan struct{} {
		if index <= 5 {
			c := make(chan struct{})
			close(c)
			return c
		}
		return applied
	}
	s, _, _ := newSimpleStore(t, TokenConfig{WaitIndex: waitIndex})
	early := authenticate(t, s, "u", 5)
	late := authenticate(t, s, "u", 6)
	if _, valid := resolves(s, early); !valid {
		t.Fatal("token of an applied index is invalid")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.AuthInfoFromToken(ctx, late); !errors.Is(err, ErrInvalidAuthToken) {
		t.Fatalf("token of an unapplied index, context done: err = %v", err)
	}
	close(applied)
	if _, valid := resolves(s, late); !valid {
		t.Fatal("token invalid once its index is applied")
	}
}

func TestSimpleTokenMalformed(t *testing.T) {
	s, _, _ := newSimpleStore(t, TokenConfig{})
	for _, token := range []string{"", "abc", "a.b.c", "abc.x", "abc.-1", "abcdefghijklmnop.1"} {
		if _, err := s.AuthInfoFromToken(context.Background(), token); !errors.Is(err, ErrInvalidAuthToken) {
			t.Errorf("token %q: err = %v, want %v", token, err, ErrInvalidAuthToken)
		}
	}
}

func TestTokensIgnoredWhileAuthDisabled(t *testing.T) {
	s, _, _ := newSimpleStore(t, TokenConfig{})
	s.AuthDisable()
	if ai, err := s.AuthInfoFromToken(context.Background(), "garbage"); ai != nil || err != nil {
		t.Fatalf("AuthInfoFromToken with auth disabled = %v, %v; want nil, nil", ai, err)
	}
}

func TestTokenFromMetadata(t *testing.T) {
	tests := []struct {
		md    map[string][]string
		want  string
		found bool
	}{
		{map[string][]string{"token": {"abc.1"}}, "abc.1", true},
		{map[string][]string{"authorization": {"Bearer xyz"}}, "xyz", true},
		{map[string][]string{"token": {"t"}, "authorization": {"a"}}, "t", true},
		{map[string][]string{"other": {"x"}}, "", false},
		{map[string][]string{"token": {}}, "", false},
	}
	for _, tt := range tests {
		if got, found := TokenFromMetadata(tt.md); got != tt.want || found != tt.found {
			t.Errorf("TokenFromMetadata(%v) = %q, %v; want %q, %v", tt.md, got, found, tt.want, tt.found)
		}
	}
}
