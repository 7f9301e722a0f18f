package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.etcd.io/etcd/api/v3/authpb"
)

// testKeys are PEM files generated once per test binary.
type testKeys struct {
	rsaPriv, rsaPub, ecPriv, ecPub, ecOtherPub, edPriv, edPub, hmac string
	rsa                                                             *rsa.PrivateKey
	ec                                                              *ecdsa.PrivateKey
	ed                                                              ed25519.PrivateKey
}

var (
	keysOnce sync.Once
	keys     testKeys
	keysErr  error
	keysDir  string
)

// loadKeys generates the keys and writes them into a directory shared by
// the whole test binary; TestMain removes it.
func loadKeys(t *testing.T) testKeys {
	t.Helper()
	keysOnce.Do(func() { keysErr = genKeys() })
	if keysErr != nil {
		t.Fatal(keysErr)
	}
	return keys
}

func genKeys() error {
	dir, err := os.MkdirTemp("", "cairn-auth-keys")
	if err != nil {
		return err
	}
	keysDir = dir
	if keys.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		return err
	}
	if keys.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return err
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if _, keys.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		return err
	}
	ecDER, err := x509.MarshalECPrivateKey(keys.ec)
	if err != nil {
		return err
	}
	edDER, err := x509.MarshalPKCS8PrivateKey(keys.ed)
	if err != nil {
		return err
	}
	files := []struct {
		dst         *string
		name, block string
		der         []byte
		pub         any
	}{
		{&keys.rsaPriv, "rsa", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(keys.rsa), nil},
		{&keys.rsaPub, "rsa.pub", "PUBLIC KEY", nil, &keys.rsa.PublicKey},
		{&keys.ecPriv, "ec", "EC PRIVATE KEY", ecDER, nil},
		{&keys.ecPub, "ec.pub", "PUBLIC KEY", nil, &keys.ec.PublicKey},
		{&keys.ecOtherPub, "ec-other.pub", "PUBLIC KEY", nil, &other.PublicKey},
		{&keys.edPriv, "ed", "PRIVATE KEY", edDER, nil},
		{&keys.edPub, "ed.pub", "PUBLIC KEY", nil, keys.ed.Public()},
	}
	for _, f := range files {
		der := f.der
		if f.pub != nil {
			if der, err = x509.MarshalPKIXPublicKey(f.pub); err != nil {
				return err
			}
		}
		*f.dst = filepath.Join(dir, f.name)
		if err := os.WriteFile(*f.dst, pem.EncodeToMemory(&pem.Block{Type: f.block, Bytes: der}), 0o600); err != nil {
			return err
		}
	}
	keys.hmac = filepath.Join(dir, "hmac")
	return os.WriteFile(keys.hmac, []byte("a shared secret"), 0o600)
}

func TestNewTokenProviderOptions(t *testing.T) {
	k := loadKeys(t)
	_, rsaParseErr := jwt.ParseRSAPrivateKeyFromPEM(mustRead(t, k.ecPriv))
	tests := []struct {
		name    string
		opts    string
		want    string // provider type, or "" on error
		wantErr error
		errText string // when the error is not a sentinel
		ttl     time.Duration
	}{
		{"empty", "", "nop", nil, "", 0},
		{"simple", "simple", "simple", nil, "", 0},
		{"simple ignores options", "simple,ttl=1m", "simple", nil, "", 0},
		{"unknown type", "jwk", "", ErrInvalidAuthOpts, "", 0},
		{"option without =", "simple,ttl", "", ErrInvalidAuthOpts, "", 0},
		{"option with two =", "jwt,sign-method=RS256,priv-key=a=b", "", ErrInvalidAuthOpts, "", 0},
		{"duplicate option", "jwt,ttl=1m,ttl=2m", "", ErrInvalidAuthOpts, "", 0},
		{"jwt without sign-method", "jwt,priv-key=" + k.rsaPriv, "", ErrInvalidAuthOpts, "", 0},
		{"unknown sign-method", "jwt,sign-method=XX256,priv-key=" + k.rsaPriv, "", ErrInvalidAuthOpts, "", 0},
		{"bad ttl", "jwt,sign-method=RS256,ttl=5,priv-key=" + k.rsaPriv, "", ErrInvalidAuthOpts, "", 0},
		{"missing key file", "jwt,sign-method=RS256,priv-key=" + k.rsaPriv + ".nope", "", ErrInvalidAuthOpts, "", 0},
		{"no key", "jwt,sign-method=RS256", "", ErrMissingKey, "", 0},
		{"hmac without key", "jwt,sign-method=HS256,pub-key=" + k.hmac, "", ErrMissingKey, "", 0},
		{"mismatched keys", "jwt,sign-method=ES256,priv-key=" + k.ecPriv + ",pub-key=" + k.ecOtherPub, "", ErrKeyMismatch, "", 0},
		{"wrong key type", "jwt,sign-method=RS256,priv-key=" + k.ecPriv, "", nil, rsaParseErr.Error(), 0},
		{"none method", "jwt,sign-method=none,priv-key=" + k.hmac, "", nil, "unsupported signing method: *jwt.signingMethodNone", 0},
		{"rsa default ttl", "jwt,pub-key=" + k.rsaPub + ",priv-key=" + k.rsaPriv + ",sign-method=RS256", "jwt", nil, "", 5 * time.Minute},
		{"rsa ttl", "jwt,priv-key=" + k.rsaPriv + ",sign-method=RS256,ttl=1h", "jwt", nil, "", time.Hour},
		{"empty ttl is default", "jwt,priv-key=" + k.rsaPriv + ",sign-method=RS256,ttl=", "jwt", nil, "", 5 * time.Minute},
		{"unknown option ignored", "jwt,priv-key=" + k.ecPriv + ",sign-method=ES256,color=blue", "jwt", nil, "", 5 * time.Minute},
		{"public key only", "jwt,pub-key=" + k.ecPub + ",sign-method=ES256", "jwt", nil, "", 5 * time.Minute},
		{"ed25519", "jwt,priv-key=" + k.edPriv + ",pub-key=" + k.edPub + ",sign-method=EdDSA", "jwt", nil, "", 5 * time.Minute},
		{"hmac", "jwt,priv-key=" + k.hmac + ",sign-method=HS256,ttl=30s", "jwt", nil, "", 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, err := NewTokenProvider(tt.opts, TokenConfig{})
			switch {
			case tt.wantErr != nil || tt.errText != "":
				if tp != nil || err == nil {
					t.Fatalf("got provider %T, err %v; want an error", tp, err)
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if tt.errText != "" && err.Error() != tt.errText {
					t.Fatalf("err = %q, want %q", err, tt.errText)
				}
			case err != nil:
				t.Fatal(err)
			default:
				checkProvider(t, tp, tt.want, tt.ttl)
			}
		})
	}
}

func checkProvider(t *testing.T, tp TokenProvider, want string, ttl time.Duration) {
	t.Helper()
	switch p := tp.(type) {
	case nopTokens:
		if want != "nop" {
			t.Fatalf("got nop provider, want %s", want)
		}
	case *simpleTokens:
		if want != "simple" || p.ttl != simpleTokenTTL {
			t.Fatalf("got simple provider (ttl %v), want %s", p.ttl, want)
		}
	case *jwtTokens:
		if want != "jwt" || p.ttl != ttl {
			t.Fatalf("got jwt provider (ttl %v), want %s with ttl %v", p.ttl, want, ttl)
		}
	default:
		t.Fatalf("unexpected provider %T", tp)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jwtCase is one sign method with its signing options, a verify-only
// variant and the key an outside issuer signs with.
type jwtCase struct {
	method, signOpts, verifyOpts string
	key                          any
}

func jwtCases(t *testing.T) []jwtCase {
	k := loadKeys(t)
	return []jwtCase{
		{"RS256", "jwt,sign-method=RS256,priv-key=" + k.rsaPriv, "jwt,sign-method=RS256,pub-key=" + k.rsaPub, k.rsa},
		{"PS256", "jwt,sign-method=PS256,priv-key=" + k.rsaPriv, "jwt,sign-method=PS256,pub-key=" + k.rsaPub, k.rsa},
		{"ES256", "jwt,sign-method=ES256,priv-key=" + k.ecPriv, "jwt,sign-method=ES256,pub-key=" + k.ecPub, k.ec},
		{"EdDSA", "jwt,sign-method=EdDSA,priv-key=" + k.edPriv, "jwt,sign-method=EdDSA,pub-key=" + k.edPub, k.ed},
		{"HS256", "jwt,sign-method=HS256,priv-key=" + k.hmac, "", []byte("a shared secret")},
	}
}

func TestJWTSignVerify(t *testing.T) {
	for _, c := range jwtCases(t) {
		t.Run(c.method, func(t *testing.T) {
			clock := newFakeClock()
			tp, err := NewTokenProvider(c.signOpts+",ttl=1m", TokenConfig{Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			token, err := tp.Assign(AssignRequest{Username: "alice", Revision: 7})
			if err != nil {
				t.Fatal(err)
			}
			checkClaims(t, token, c.method, clock.Now().Add(time.Minute).Unix())
			if user, rev, ok := tp.Info(context.Background(), token); !ok || user != "alice" || rev != 7 {
				t.Fatalf("Info = %q, %d, %v; want alice, 7, true", user, rev, ok)
			}
			if _, _, ok := tp.Info(context.Background(), token[:len(token)-2]+"xx"); ok {
				t.Fatal("tampered token accepted")
			}
			if c.verifyOpts != "" {
				checkVerifyOnly(t, c.verifyOpts, clock, token)
			}
			clock.Advance(time.Minute + time.Second)
			if _, _, ok := tp.Info(context.Background(), token); ok {
				t.Fatal("expired token accepted")
			}
		})
	}
}

// checkClaims decodes the token without verifying: exactly etcd's claims.
func checkClaims(t *testing.T, token, method string, exp int64) {
	t.Helper()
	claims := jwt.MapClaims{}
	parsed, _, err := jwt.NewParser().ParseUnverified(token, claims)
	if err != nil {
		t.Fatal(err)
	}
	if parsed.Method.Alg() != method {
		t.Errorf("alg = %s, want %s", parsed.Method.Alg(), method)
	}
	if len(claims) != 3 || claims["username"] != "alice" || claims["revision"] != float64(7) || claims["exp"] != float64(exp) {
		t.Errorf("claims = %v, want username alice, revision 7, exp %d", claims, exp)
	}
}

func checkVerifyOnly(t *testing.T, opts string, clock Clock, token string) {
	t.Helper()
	vp, err := NewTokenProvider(opts, TokenConfig{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if user, _, ok := vp.Info(context.Background(), token); !ok || user != "alice" {
		t.Fatalf("verify-only Info = %q, %v", user, ok)
	}
	if _, err := vp.Assign(AssignRequest{Username: "alice"}); !errors.Is(err, ErrVerifyOnly) {
		t.Fatalf("verify-only Assign err = %v, want %v", err, ErrVerifyOnly)
	}
}

func TestJWTRejects(t *testing.T) {
	k := loadKeys(t)
	clock := newFakeClock()
	tp, err := NewTokenProvider("jwt,sign-method=RS256,priv-key="+k.rsaPriv, TokenConfig{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	exp := clock.Now().Add(time.Hour).Unix()
	tests := []struct {
		name   string
		method jwt.SigningMethod
		key    any
		claims jwt.MapClaims
	}{
		{"other method", jwt.SigningMethodRS384, k.rsa, jwt.MapClaims{"username": "a", "revision": 1, "exp": exp}},
		{"other key", jwt.SigningMethodES256, k.ec, jwt.MapClaims{"username": "a", "revision": 1, "exp": exp}},
		{"no username", jwt.SigningMethodRS256, k.rsa, jwt.MapClaims{"revision": 1, "exp": exp}},
		{"no revision", jwt.SigningMethodRS256, k.rsa, jwt.MapClaims{"username": "a", "exp": exp}},
		{"string revision", jwt.SigningMethodRS256, k.rsa, jwt.MapClaims{"username": "a", "revision": "1"}},
		{"expired", jwt.SigningMethodRS256, k.rsa, jwt.MapClaims{"username": "a", "revision": 1, "exp": clock.Now().Add(-time.Second).Unix()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token, err := jwt.NewWithClaims(tt.method, tt.claims).SignedString(tt.key)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, ok := tp.Info(context.Background(), token); ok {
				t.Fatal("token accepted")
			}
		})
	}
}

// TestJWTSignedElsewhere: a token an outside issuer signed with the
// configured key works without Authenticate, down to the permission checks.
func TestJWTSignedElsewhere(t *testing.T) {
	for _, c := range jwtCases(t) {
		t.Run(c.method, func(t *testing.T) {
			clock := newFakeClock()
			opts := c.verifyOpts
			if opts == "" {
				opts = c.signOpts
			}
			tp, err := NewTokenProvider(opts, TokenConfig{Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			s, _, _ := newStore(t, tp)
			enableWithRoot(t, s)
			addRole(t, s, "r", perm(authpb.Permission_READWRITE, "app/", "app0"))
			addUser(t, s, "app", "pw", "r")
			claims := jwt.MapClaims{"username": "app", "revision": s.Revision(), "exp": clock.Now().Add(time.Hour).Unix(), "iss": "vault"}
			token, err := jwt.NewWithClaims(jwt.GetSigningMethod(c.method), claims).SignedString(c.key)
			if err != nil {
				t.Fatal(err)
			}
			ai, err := s.AuthInfoFromToken(context.Background(), token)
			if err != nil || *ai != (AuthInfo{"app", s.Revision()}) {
				t.Fatalf("AuthInfoFromToken = %v, %v", ai, err)
			}
			if err := s.IsPutPermitted(*ai, []byte("app/x")); err != nil {
				t.Fatalf("put with the external token: %v", err)
			}
			addRole(t, s, "later")
			if err := s.IsPutPermitted(*ai, []byte("app/x")); !errors.Is(err, ErrAuthOldRevision) {
				t.Fatalf("put after an auth change: %v, want %v", err, ErrAuthOldRevision)
			}
		})
	}
}
