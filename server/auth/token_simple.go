package auth

import (
	"context"
	"crypto/rand"
	"errors"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/defaults"
)

const (
	simpleTokenLetters  = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	simpleTokenLength   = 16
	simpleTokenTTL      = 300 * time.Second
	simpleTokenSweepGap = time.Second
)

var errTokenInUse = errors.New("auth: simple token already assigned")

// simpleTokens are etcd's "simple" tokens: "<16 random letters>.<raft
// index>", remembered by every member in memory (the Authenticate entry
// brings the same token to all) and valid while used at least once per TTL.
// Expired tokens are dropped when next looked at, and all of them at most
// once a second by the next Assign or Info: no goroutine runs.
type simpleTokens struct {
	lg        *zap.Logger
	clock     Clock
	ttl       time.Duration
	waitIndex func(uint64) <-chan struct{}
	revision  func() uint64

	mu        sync.Mutex
	enabled   bool
	tokens    map[string]*simpleToken
	nextSweep time.Time
}

type simpleToken struct {
	username string
	expires  time.Time
}

func newSimpleTokens(cfg TokenConfig) *simpleTokens {
	return &simpleTokens{
		lg: cfg.Logger, clock: cfg.Clock, ttl: defaults.Positive(cfg.SimpleTTL, simpleTokenTTL), waitIndex: cfg.WaitIndex,
		revision: func() uint64 { return 0 },
		tokens:   make(map[string]*simpleToken),
	}
}

func (t *simpleTokens) bindRevision(rev func() uint64) { t.revision = rev }

func (t *simpleTokens) GenTokenPrefix() (string, error) {
	b := make([]byte, simpleTokenLength)
	n := big.NewInt(int64(len(simpleTokenLetters)))
	for i := range b {
		r, err := rand.Int(rand.Reader, n)
		if err != nil {
			return "", err
		}
		b[i] = simpleTokenLetters[r.Int64()]
	}
	return string(b), nil
}

// Assign remembers the token only while auth is enabled; like etcd it still
// returns the (then useless) token otherwise.
func (t *simpleTokens) Assign(req AssignRequest) (string, error) {
	token := req.Prefix + "." + strconv.FormatUint(req.Index, 10)
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.enabled {
		return token, nil
	}
	now := t.clock.Now()
	t.sweep(now)
	if _, used := t.tokens[token]; used {
		return "", errTokenInUse
	}
	t.tokens[token] = &simpleToken{username: req.Username, expires: now.Add(t.ttl)}
	return token, nil
}

// Info waits until the issuing entry is applied here, then resolves the
// token and extends its life by a TTL.
func (t *simpleTokens) Info(ctx context.Context, token string) (string, uint64, bool) {
	index, ok := simpleTokenIndex(token)
	if !ok || !t.waitApplied(ctx, index) {
		return "", 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	t.sweep(now)
	tk, ok := t.tokens[token]
	if !ok || now.After(tk.expires) {
		delete(t.tokens, token)
		return "", 0, false
	}
	tk.expires = now.Add(t.ttl)
	return tk.username, t.revision(), true
}

func simpleTokenIndex(token string) (uint64, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 2 {
		return 0, false
	}
	index, err := strconv.ParseUint(parts[1], 10, 64)
	return index, err == nil
}

func (t *simpleTokens) waitApplied(ctx context.Context, index uint64) bool {
	if t.waitIndex == nil {
		return true
	}
	select {
	case <-t.waitIndex(index):
		return true
	case <-ctx.Done():
		return false
	}
}

// sweep drops expired tokens, at most once per simpleTokenSweepGap.
func (t *simpleTokens) sweep(now time.Time) {
	if now.Before(t.nextSweep) {
		return
	}
	t.nextSweep = now.Add(simpleTokenSweepGap)
	for token, tk := range t.tokens {
		if now.After(tk.expires) {
			t.lg.Debug("deleted a simple token", zap.String("user-name", tk.username))
			delete(t.tokens, token)
		}
	}
}

func (t *simpleTokens) Enable() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.enabled = true
}

func (t *simpleTokens) Disable() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.enabled = false
	t.tokens = make(map[string]*simpleToken)
}

func (t *simpleTokens) InvalidateUser(username string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for token, tk := range t.tokens {
		if tk.username == username {
			delete(t.tokens, token)
		}
	}
}
