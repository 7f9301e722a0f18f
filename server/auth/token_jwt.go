package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/zap"
)

// Options of "jwt" in --auth-token.
const (
	jwtOptSignMethod = "sign-method"
	jwtOptPublicKey  = "pub-key"
	jwtOptPrivateKey = "priv-key"
	jwtOptTTL        = "ttl"
)

// DefaultJWTTTL is the lifetime of an issued JWT when ttl is not given.
const DefaultJWTTTL = 5 * time.Minute

// jwtTokens are stateless, signed tokens with the claims username, revision
// and exp. Any token signed with the configured key and method is accepted,
// whoever issued it; with only a public key the provider verifies but
// cannot issue.
type jwtTokens struct {
	lg         *zap.Logger
	clock      Clock
	method     jwt.SigningMethod
	key        any // a private key, a public key (verify only) or an HMAC secret
	ttl        time.Duration
	verifyOnly bool
}

// jwtOptions are the parsed options of "jwt".
type jwtOptions struct {
	method     jwt.SigningMethod
	publicKey  []byte
	privateKey []byte
	ttl        time.Duration
}

func newJWTTokens(opts map[string]string, cfg TokenConfig) (*jwtTokens, error) {
	o, err := parseJWTOptions(opts)
	if err != nil {
		cfg.Logger.Error("problem loading JWT options", zap.Error(err))
		return nil, ErrInvalidAuthOpts
	}
	key, err := o.key()
	if err != nil {
		return nil, err
	}
	return &jwtTokens{
		lg: cfg.Logger, clock: cfg.Clock, method: o.method, key: key, ttl: o.ttl,
		verifyOnly: isPublicKey(key),
	}, nil
}

// parseJWTOptions reads the options; unknown names are ignored, as in etcd.
func parseJWTOptions(opts map[string]string) (jwtOptions, error) {
	o := jwtOptions{ttl: DefaultJWTTTL}
	var err error
	if s := opts[jwtOptTTL]; s != "" {
		if o.ttl, err = time.ParseDuration(s); err != nil {
			return o, err
		}
	}
	if path := opts[jwtOptPublicKey]; path != "" {
		if o.publicKey, err = os.ReadFile(path); err != nil {
			return o, err
		}
	}
	if path := opts[jwtOptPrivateKey]; path != "" {
		if o.privateKey, err = os.ReadFile(path); err != nil {
			return o, err
		}
	}
	if o.method = jwt.GetSigningMethod(opts[jwtOptSignMethod]); o.method == nil {
		return o, ErrInvalidAuthMethod
	}
	return o, nil
}

// key parses the key material the sign method needs.
func (o jwtOptions) key() (any, error) {
	switch o.method.(type) {
	case *jwt.SigningMethodRSA, *jwt.SigningMethodRSAPSS:
		return pickKey(o, jwt.ParseRSAPrivateKeyFromPEM, jwt.ParseRSAPublicKeyFromPEM)
	case *jwt.SigningMethodECDSA:
		return pickKey(o, jwt.ParseECPrivateKeyFromPEM, jwt.ParseECPublicKeyFromPEM)
	case *jwt.SigningMethodEd25519:
		return pickKey(o, parseEdPrivate, parseEdPublic)
	case *jwt.SigningMethodHMAC:
		if len(o.privateKey) == 0 {
			return nil, ErrMissingKey
		}
		return o.privateKey, nil
	default:
		return nil, fmt.Errorf("unsupported signing method: %T", o.method)
	}
}

func parseEdPrivate(b []byte) (ed25519.PrivateKey, error) {
	k, err := jwt.ParseEdPrivateKeyFromPEM(b)
	if err != nil {
		return nil, err
	}
	return k.(ed25519.PrivateKey), nil
}

func parseEdPublic(b []byte) (ed25519.PublicKey, error) {
	k, err := jwt.ParseEdPublicKeyFromPEM(b)
	if err != nil {
		return nil, err
	}
	return k.(ed25519.PublicKey), nil
}

// pickKey returns the private key if given (checking that the public key,
// if also given, is its pair), else the public key, else ErrMissingKey.
func pickKey[Priv interface{ Public() crypto.PublicKey }, Pub interface{ Equal(crypto.PublicKey) bool }](
	o jwtOptions, parsePriv func([]byte) (Priv, error), parsePub func([]byte) (Pub, error),
) (any, error) {
	hasPriv, hasPub := len(o.privateKey) > 0, len(o.publicKey) > 0
	var priv Priv
	var pub Pub
	var err error
	if hasPriv {
		if priv, err = parsePriv(o.privateKey); err != nil {
			return nil, err
		}
	}
	if hasPub {
		if pub, err = parsePub(o.publicKey); err != nil {
			return nil, err
		}
	}
	switch {
	case !hasPriv && !hasPub:
		return nil, ErrMissingKey
	case !hasPriv:
		return pub, nil
	case hasPub && !pub.Equal(priv.Public()):
		return nil, ErrKeyMismatch
	}
	return priv, nil
}

func isPublicKey(key any) bool {
	switch key.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		return true
	}
	return false
}

// verificationKey is the key that checks signatures made with key.
func verificationKey(key any) any {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return &k.PublicKey
	case *ecdsa.PrivateKey:
		return &k.PublicKey
	case ed25519.PrivateKey:
		return k.Public()
	}
	return key
}

func (t *jwtTokens) GenTokenPrefix() (string, error) { return "", nil }
func (t *jwtTokens) Enable()                         {}
func (t *jwtTokens) Disable()                        {}
func (t *jwtTokens) InvalidateUser(string)           {}

// Assign signs {username, revision, exp = now + ttl}.
func (t *jwtTokens) Assign(req AssignRequest) (string, error) {
	if t.verifyOnly {
		return "", ErrVerifyOnly
	}
	claims := jwt.MapClaims{
		"username": req.Username,
		"revision": req.Revision,
		"exp":      t.clock.Now().Add(t.ttl).Unix(),
	}
	token, err := jwt.NewWithClaims(t.method, claims).SignedString(t.key)
	if err != nil {
		t.lg.Debug("failed to sign a JWT token", zap.String("user-name", req.Username), zap.Error(err))
		return "", err
	}
	return token, nil
}

var errJWTMethod = errors.New("invalid signing method")

// Info accepts a token signed with the configured method and key, not
// expired, with a string username and a numeric revision.
func (t *jwtTokens) Info(_ context.Context, token string) (string, uint64, bool) {
	parsed, err := jwt.Parse(token, func(tk *jwt.Token) (any, error) {
		if tk.Method.Alg() != t.method.Alg() {
			return nil, errJWTMethod
		}
		return verificationKey(t.key), nil
	}, jwt.WithTimeFunc(t.clock.Now))
	if err != nil {
		t.lg.Warn("failed to parse a JWT token", zap.Error(err))
		return "", 0, false
	}
	claims, ok := parsed.Claims.(jwt.MapClaims)
	if !parsed.Valid || !ok {
		return "", 0, false
	}
	username, ok := claims["username"].(string)
	if !ok {
		return "", 0, false
	}
	revision, ok := claims["revision"].(float64)
	if !ok {
		return "", 0, false
	}
	return username, uint64(revision), true
}
