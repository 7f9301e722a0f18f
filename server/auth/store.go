package auth

import (
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	"golang.org/x/crypto/bcrypt"

	"github.com/cairnkv/cairn/server/storage/backend"
)

const (
	rootUser = "root"
	rootRole = "root"
)

// AuthInfo says who sends a request and at which auth revision the user
// was authenticated; the API layer puts it in the request header
// (RequestHeader.Username, RequestHeader.AuthRevision).
type AuthInfo struct {
	Username string
	Revision uint64
}

// Config configures New.
type Config struct {
	// Backend holds the auth buckets. Required.
	Backend backend.Backend
	// Tokens issues and resolves tokens; nil means none (every token is
	// invalid and Authenticate fails), like etcd's empty --auth-token.
	Tokens TokenProvider
	// BcryptCost is --bcrypt-cost. A value outside [bcrypt.MinCost,
	// bcrypt.MaxCost] becomes bcrypt.DefaultCost, with a warning, as in etcd.
	BcryptCost int
	// Logger defaults to a no-op logger.
	Logger *zap.Logger
}

// Store is the auth state of one member. See the package doc for which
// methods belong to the apply step and which to the API layer.
type Store struct {
	lg         *zap.Logger
	tokens     TokenProvider
	bcryptCost int

	// beMu guards be, which Recover replaces.
	beMu sync.RWMutex
	be   backend.Backend

	// writeMu serializes the state-changing operations (the apply step
	// already does; this keeps the invariants if someone else calls).
	writeMu sync.Mutex
	// enabled, revision and perms are published by the writer and read
	// lock-free by the permission checks and the API layer.
	enabled  atomic.Bool
	revision atomic.Uint64
	perms    atomic.Pointer[permCache]
}

// New loads the auth state from cfg.Backend. On a backend without an auth
// revision it writes revision 1, as etcd does; the member commits it.
func New(cfg Config) *Store {
	s := &Store{lg: cfg.Logger, tokens: cfg.Tokens, bcryptCost: cfg.BcryptCost}
	if s.lg == nil {
		s.lg = zap.NewNop()
	}
	if s.tokens == nil {
		s.tokens = nopTokens{}
	}
	if s.bcryptCost < bcrypt.MinCost || s.bcryptCost > bcrypt.MaxCost {
		s.lg.Warn("use default bcrypt cost instead of the invalid given cost",
			zap.Int("min-cost", bcrypt.MinCost), zap.Int("max-cost", bcrypt.MaxCost),
			zap.Int("default-cost", bcrypt.DefaultCost), zap.Int("given-cost", cfg.BcryptCost))
		s.bcryptCost = bcrypt.DefaultCost
	}
	if b, ok := s.tokens.(revisionBinder); ok {
		b.bindRevision(s.Revision)
	}
	s.load(cfg.Backend, true)
	return s
}

// Recover reloads the whole auth state from be, which replaces the store's
// backend (after the member installed a snapshot). Tokens stay as they are,
// except that the provider is enabled or disabled to match.
func (s *Store) Recover(be backend.Backend) {
	s.load(be, false)
}

func (s *Store) load(be backend.Backend, initRevision bool) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.beMu.Lock()
	s.be = be
	s.beMu.Unlock()

	tx := be.BatchTx()
	tx.Lock()
	defer tx.Unlock()
	enabled := readEnabled(tx)
	s.revision.Store(readRevision(tx))
	if initRevision && s.revision.Load() == 0 {
		s.bumpRevision(tx)
	}
	s.refreshPerms(tx)
	s.setEnabled(enabled)
}

func (s *Store) backend() backend.Backend {
	s.beMu.RLock()
	defer s.beMu.RUnlock()
	return s.be
}

// lockBatch takes the writer lock and the backend's batch lock; the
// returned function releases both.
func (s *Store) lockBatch() (backend.BatchTx, func()) {
	s.writeMu.Lock()
	tx := s.backend().BatchTx()
	tx.Lock()
	return tx, func() {
		tx.Unlock()
		s.writeMu.Unlock()
	}
}

// commitRevision bumps and persists the auth revision and rebuilds the
// permission cache: every change to users or roles ends here.
func (s *Store) commitRevision(tx backend.BatchTx) {
	s.bumpRevision(tx)
	s.refreshPerms(tx)
}

func (s *Store) bumpRevision(tx backend.UnsafeWriter) {
	writeRevision(tx, s.revision.Add(1))
}

func (s *Store) refreshPerms(tx backend.UnsafeReader) {
	cache := buildPermCache(tx)
	s.perms.Store(&cache)
}

func (s *Store) setEnabled(enabled bool) {
	if s.enabled.Swap(enabled) == enabled {
		return
	}
	if enabled {
		s.tokens.Enable()
	} else {
		s.tokens.Disable()
	}
}

// Revision is the current auth revision.
func (s *Store) Revision() uint64 { return s.revision.Load() }

// IsAuthEnabled reports whether auth is enabled.
func (s *Store) IsAuthEnabled() bool { return s.enabled.Load() }

// BcryptCost is the cost the API layer hashes new passwords with.
func (s *Store) BcryptCost() int { return s.bcryptCost }

// AuthEnable turns auth on. It needs a root user with the root role; it is a
// no-op when auth is already on. Like etcd it does not bump the revision.
func (s *Store) AuthEnable() error {
	tx, unlock := s.lockBatch()
	defer unlock()
	if s.IsAuthEnabled() {
		s.lg.Info("authentication is already enabled; ignored auth enable request")
		return nil
	}
	u := getUser(tx, rootUser)
	if u == nil {
		return ErrRootUserNotExist
	}
	if !hasRootRole(u) {
		return ErrRootRoleNotExist
	}
	writeEnabled(tx, true)
	s.refreshPerms(tx)
	s.setEnabled(true)
	s.lg.Info("enabled authentication")
	return nil
}

// AuthDisable turns auth off and drops every simple token; a no-op when auth
// is already off.
func (s *Store) AuthDisable() {
	tx, unlock := s.lockBatch()
	defer unlock()
	if !s.IsAuthEnabled() {
		return
	}
	writeEnabled(tx, false)
	s.commitRevision(tx)
	s.setEnabled(false)
	s.lg.Info("disabled authentication")
}

// AuthStatus returns whether auth is enabled and the auth revision. The API
// layer answers it without a token (a client whose token expired learns the
// revision by asking without one) but, like etcd, refuses an invalid token.
func (s *Store) AuthStatus() (enabled bool, revision uint64) {
	return s.IsAuthEnabled(), s.Revision()
}
