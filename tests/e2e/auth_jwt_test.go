package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// referenceBin is the executable of single-member tests that also run
// against etcd: etcd v3.7.3 under CAIRN_E2E_REFERENCE=etcd, else cairn.
func referenceBin(t testing.TB) string {
	t.Helper()
	if os.Getenv(referenceEnv) == "etcd" {
		return etcdBinary(t)
	}
	return ""
}

// jwtKeys is the key material of one sign method: the --auth-token value
// that configures it and the key the test signs its own tokens with.
type jwtKeys struct {
	method  jwt.SigningMethod
	option  string // --auth-token value, without ttl
	signKey any
}

// newJWTKeys makes fresh keys for method ("RS256", "ES256" or "HS256") in
// dir. An HMAC method takes its secret from the priv-key file, as in etcd.
func newJWTKeys(t testing.TB, dir, method string) jwtKeys {
	t.Helper()
	priv, pub := filepath.Join(dir, method+".key"), filepath.Join(dir, method+".pub")
	k := jwtKeys{method: jwt.GetSigningMethod(method)}
	switch method {
	case "RS256":
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		must(t, err)
		writePEMFile(t, priv, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))
		writePublicPEM(t, pub, &key.PublicKey)
		k.signKey = key
	case "ES256":
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(t, err)
		der, err := x509.MarshalECPrivateKey(key)
		must(t, err)
		writePEMFile(t, priv, "EC PRIVATE KEY", der)
		writePublicPEM(t, pub, &key.PublicKey)
		k.signKey = key
	case "HS256":
		secret := make([]byte, 32)
		_, err := rand.Read(secret)
		must(t, err)
		must(t, os.WriteFile(priv, secret, 0o600))
		k.signKey = secret
		k.option = fmt.Sprintf("jwt,priv-key=%s,sign-method=%s", priv, method)
		return k
	default:
		t.Fatalf("no keys for %s", method)
	}
	k.option = fmt.Sprintf("jwt,pub-key=%s,priv-key=%s,sign-method=%s", pub, priv, method)
	return k
}

func writePublicPEM(t testing.TB, path string, key any) {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(key)
	must(t, err)
	writePEMFile(t, path, "PUBLIC KEY", der)
}

// mint signs etcd's JWT claims (username, revision, exp) with key.
func mint(t testing.TB, method jwt.SigningMethod, key any, user string, revision uint64, exp time.Time) string {
	t.Helper()
	token, err := jwt.NewWithClaims(method, jwt.MapClaims{
		"username": user, "revision": revision, "exp": exp.Unix(),
	}).SignedString(key)
	must(t, err)
	return token
}

// TestAuthJWT: with --auth-token jwt a member issues signed tokens through
// Authenticate, and accepts any token signed with its key (minted outside,
// no Authenticate needed) while it has not expired; an expired token, one
// signed with another key or with another method is refused with etcd's
// error. Passes with CAIRN_E2E_REFERENCE=etcd.
func TestAuthJWT(t *testing.T) {
	for _, method := range []string{"RS256", "ES256", "HS256"} {
		t.Run(method, func(t *testing.T) {
			dir := t.TempDir()
			keys := newJWTKeys(t, dir, method)
			other := newJWTKeys(t, t.TempDir(), method)
			m, cli := startAuthMember(t, memberOpts{bin: referenceBin(t), args: []string{"--auth-token", keys.option + ",ttl=5m"}})

			alice := authClient(t, "alice", "alicepw", m.clientURL)
			_, err := alice.Put(ctx(t), "a/1", "x")
			must(t, err)
			issued := rawToken(t, cli, "alice", "alicepw")
			if parts := strings.Split(issued, "."); len(parts) != 3 {
				t.Fatalf("Authenticate returned %q, not a JWT", issued)
			}
			must(t, getWithToken(t, cli, issued, "a/1"))

			st, err := cli.AuthStatus(ctx(t))
			must(t, err)
			rev, later := st.AuthRevision, time.Now().Add(time.Hour)
			must(t, getWithToken(t, cli, mint(t, keys.method, keys.signKey, "alice", rev, later), "a/1"))
			wantErr(t, getWithToken(t, cli, mint(t, keys.method, keys.signKey, "alice", rev, later), "secret"),
				rpctypes.ErrPermissionDenied)
			// A token minted before the last auth change is stale.
			wantErr(t, getWithToken(t, cli, mint(t, keys.method, keys.signKey, "alice", rev-1, later), "a/1"),
				rpctypes.ErrAuthOldRevision)

			refused := map[string]string{
				"expired":        mint(t, keys.method, keys.signKey, "alice", rev, time.Now().Add(-time.Minute)),
				"other key":      mint(t, other.method, other.signKey, "alice", rev, later),
				"other method":   mint(t, jwt.SigningMethodHS384, []byte("guessed secret"), "alice", rev, later),
				"unsigned":       mint(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "alice", rev, later),
				"tampered claim": tamper(t, issued),
			}
			for name, token := range refused {
				if err := getWithToken(t, cli, token, "a/1"); !sameErr(err, rpctypes.ErrInvalidAuthToken) {
					t.Errorf("%s token: error = %s, want %s", name, describeErr(err), describeErr(rpctypes.ErrInvalidAuthToken))
				}
			}
		})
	}
}

// tamper makes the token's payload name root instead of its user, keeping
// the signature.
func tamper(t testing.TB, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	must(t, err)
	var claims map[string]any
	must(t, json.Unmarshal(payload, &claims))
	claims["username"] = "root"
	payload, err = json.Marshal(claims)
	must(t, err)
	parts[1] = base64.RawURLEncoding.EncodeToString(payload)
	return strings.Join(parts, ".")
}

// TestAuthJWTExpiryReauthenticates: a JWT issued with a short ttl expires,
// the member refuses it, and the official client authenticates again by
// itself and goes on. Passes with CAIRN_E2E_REFERENCE=etcd.
func TestAuthJWTExpiryReauthenticates(t *testing.T) {
	keys := newJWTKeys(t, t.TempDir(), "RS256")
	m, cli := startAuthMember(t, memberOpts{bin: referenceBin(t), args: []string{"--auth-token", keys.option + ",ttl=1s"}})
	alice := authClient(t, "alice", "alicepw", m.clientURL)
	_, err := alice.Put(ctx(t), "a/1", "x")
	must(t, err)
	token := rawToken(t, cli, "alice", "alicepw")
	must(t, getWithToken(t, cli, token, "a/1"))

	// exp has a resolution of one second: after 2.5 s both tokens are
	// past it however the issue time was rounded.
	time.Sleep(2500 * time.Millisecond)
	wantErr(t, getWithToken(t, cli, token, "a/1"), rpctypes.ErrInvalidAuthToken)
	resp, err := alice.Get(ctx(t), "a/1")
	must(t, err)
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "x" {
		t.Fatalf("a/1 after re-authentication = %v", resp.Kvs)
	}
	_, err = alice.Put(ctx(t), "a/2", "y")
	must(t, err)
}
