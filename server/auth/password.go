package auth

import (
	"context"
	"encoding/base64"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
	"golang.org/x/crypto/bcrypt"
)

// GenerateHash hashes password with bcrypt at cost and returns it base64
// encoded, the form AuthUserAddRequest.HashedPassword and
// AuthUserChangePasswordRequest.HashedPassword carry through raft. A cost
// below bcrypt.MinCost hashes at bcrypt.DefaultCost; one above
// bcrypt.MaxCost is an error (bcrypt's own rules; Store.BcryptCost is
// always valid).
func GenerateHash(password string, cost int) (string, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(hash), nil
}

// HashUserAdd prepares a UserAdd request in the API layer, before it is
// proposed: unless the user has no password, the password is replaced by
// its hash, so the raft log never holds it in plain text.
func HashUserAdd(r *pb.AuthUserAddRequest, cost int) error {
	if r.Options != nil && r.Options.NoPassword {
		return nil
	}
	return hashInPlace(&r.Password, &r.HashedPassword, cost)
}

// HashChangePassword is HashUserAdd for UserChangePassword. As in etcd an
// empty password is passed on unhashed (and stored as an empty hash, which
// no password matches).
func HashChangePassword(r *pb.AuthUserChangePasswordRequest, cost int) error {
	if r.Password == "" {
		return nil
	}
	return hashInPlace(&r.Password, &r.HashedPassword, cost)
}

// hashInPlace moves the hash of *password to *hashed and clears *password.
func hashInPlace(password, hashed *string, cost int) error {
	hash, err := GenerateHash(*password, cost)
	if err != nil {
		return err
	}
	*hashed, *password = hash, ""
	return nil
}

// selectPassword returns the bcrypt hash to store. Entries written by etcd
// before v3.5 carry the plain password and no hash; those are hashed here.
func (s *Store) selectPassword(password, hashed string) ([]byte, error) {
	if password != "" && hashed == "" {
		return bcrypt.GenerateFromPassword([]byte(password), s.bcryptCost)
	}
	return base64.StdEncoding.DecodeString(hashed)
}

// storedPassword is what a user with options keeps as its password: none
// for a NoPassword user, else selectPassword's hash (ErrNoPasswordUser if
// there is none to take).
func (s *Store) storedPassword(options *authpb.UserAddOptions, password, hashed string) ([]byte, error) {
	if options != nil && options.NoPassword {
		return nil, nil
	}
	stored, err := s.selectPassword(password, hashed)
	if err != nil {
		return nil, ErrNoPasswordUser
	}
	return stored, nil
}

// CheckPassword checks a user's password in the API layer (bcrypt takes
// ~100 ms, too slow for the apply step). It returns the auth revision the
// check was made at: the caller proposes Authenticate and, once it is
// applied, compares this revision with Revision(); if they differ the
// password may have changed in between and the caller must check again.
func (s *Store) CheckPassword(username, password string) (uint64, error) {
	if !s.IsAuthEnabled() {
		return 0, ErrAuthNotEnabled
	}
	tx := s.backend().ReadTx()
	tx.RLock()
	user := getUser(tx, username)
	revision := readRevision(tx)
	tx.RUnlock()
	if user == nil {
		return 0, ErrAuthFailed
	}
	if user.Options != nil && user.Options.NoPassword {
		return 0, ErrNoPasswordUser
	}
	if bcrypt.CompareHashAndPassword(user.Password, []byte(password)) != nil {
		s.lg.Info("invalid password", zap.String("user-name", username))
		return 0, ErrAuthFailed
	}
	return revision, nil
}

// GenTokenPrefix makes the random part of a simple token in the API layer,
// to be carried in InternalAuthenticateRequest.SimpleToken; it is empty for
// other token types.
func (s *Store) GenTokenPrefix() (string, error) { return s.tokens.GenTokenPrefix() }

// Authenticate issues a token in the apply step, after CheckPassword passed
// in the API layer. index is the raft index of the entry (simple tokens end
// with it). The password is not checked again.
func (s *Store) Authenticate(r *pb.InternalAuthenticateRequest, index uint64) (*pb.AuthenticateResponse, error) {
	if !s.IsAuthEnabled() {
		return nil, ErrAuthNotEnabled
	}
	user := s.readUser(r.Name)
	if user == nil || (user.Options != nil && user.Options.NoPassword) {
		return nil, ErrAuthFailed
	}
	token, err := s.tokens.Assign(AssignRequest{
		Username: r.Name, Revision: s.Revision(), Prefix: r.SimpleToken, Index: index,
	})
	if err != nil {
		return nil, err
	}
	return &pb.AuthenticateResponse{Token: token}, nil
}

// AuthInfoFromToken resolves a request's token in the API layer. With auth
// disabled it returns nil and no error (the token is ignored). A simple
// token carries no revision: its provider, bound to the store by New,
// reports the store's current one, as in etcd.
func (s *Store) AuthInfoFromToken(ctx context.Context, token string) (*AuthInfo, error) {
	if !s.IsAuthEnabled() {
		return nil, nil
	}
	user, rev, ok := s.tokens.Info(ctx, token)
	if !ok {
		s.lg.Warn("invalid auth token", zap.String("token-fingerprint", redactToken(token)))
		return nil, ErrInvalidAuthToken
	}
	return &AuthInfo{Username: user, Revision: rev}, nil
}
