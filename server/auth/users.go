package auth

import (
	"slices"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
)

// UserAdd creates a user. The API layer has hashed the password into
// r.HashedPassword (see HashUserAdd); with r.Options.NoPassword the user
// gets none and can only be used through TLS client certificates.
func (s *Store) UserAdd(r *pb.AuthUserAddRequest) (*pb.AuthUserAddResponse, error) {
	if r.Name == "" {
		return nil, ErrUserEmpty
	}
	if len(r.Name) > maxNameBytes {
		return nil, ErrNameTooLong
	}
	tx, unlock := s.lockBatch()
	defer unlock()
	if getUser(tx, r.Name) != nil {
		return nil, ErrUserAlreadyExist
	}
	options := r.Options
	if options == nil {
		options = &authpb.UserAddOptions{NoPassword: false}
	}
	password, err := s.storedPassword(options, r.Password, r.HashedPassword)
	if err != nil {
		return nil, err
	}
	putUser(tx, &authpb.User{Name: []byte(r.Name), Password: password, Options: options})
	s.commitRevision(tx)
	s.lg.Info("added a user", zap.String("user-name", r.Name))
	return &pb.AuthUserAddResponse{}, nil
}

// UserDelete deletes a user and invalidates its tokens. The root user
// cannot be deleted while auth is enabled.
func (s *Store) UserDelete(r *pb.AuthUserDeleteRequest) (*pb.AuthUserDeleteResponse, error) {
	if s.IsAuthEnabled() && r.Name == rootUser {
		return nil, ErrInvalidAuthMgmt
	}
	tx, unlock := s.lockBatch()
	defer unlock()
	if getUser(tx, r.Name) == nil {
		return nil, ErrUserNotFound
	}
	deleteUser(tx, r.Name)
	s.commitRevision(tx)
	s.tokens.InvalidateUser(r.Name)
	s.lg.Info("deleted a user", zap.String("user-name", r.Name))
	return &pb.AuthUserDeleteResponse{}, nil
}

// UserChangePassword replaces a user's password with r.HashedPassword (see
// HashChangePassword) and invalidates its tokens. A NoPassword user keeps no
// password, as in etcd.
func (s *Store) UserChangePassword(r *pb.AuthUserChangePasswordRequest) (*pb.AuthUserChangePasswordResponse, error) {
	tx, unlock := s.lockBatch()
	defer unlock()
	user := getUser(tx, r.Name)
	if user == nil {
		return nil, ErrUserNotFound
	}
	password, err := s.storedPassword(user.Options, r.Password, r.HashedPassword)
	if err != nil {
		return nil, err
	}
	putUser(tx, &authpb.User{Name: []byte(r.Name), Roles: user.Roles, Password: password, Options: user.Options})
	s.commitRevision(tx)
	s.tokens.InvalidateUser(r.Name)
	s.lg.Info("changed a password of a user", zap.String("user-name", r.Name))
	return &pb.AuthUserChangePasswordResponse{}, nil
}

// UserGrantRole grants a role to a user. The role must exist, except root,
// which can be granted before it is created. Granting a role the user has
// already succeeds without a change (and without a revision bump).
func (s *Store) UserGrantRole(r *pb.AuthUserGrantRoleRequest) (*pb.AuthUserGrantRoleResponse, error) {
	tx, unlock := s.lockBatch()
	defer unlock()
	user := getUser(tx, r.User)
	if user == nil {
		return nil, ErrUserNotFound
	}
	if r.Role != rootRole && getRole(tx, r.Role) == nil {
		return nil, ErrRoleNotFound
	}
	idx, found := slices.BinarySearch(user.Roles, r.Role)
	if found {
		s.lg.Warn("ignored grant role request to a user",
			zap.String("user-name", r.User), zap.String("duplicate-role-name", r.Role))
		return &pb.AuthUserGrantRoleResponse{}, nil
	}
	user.Roles = slices.Insert(user.Roles, idx, r.Role)
	putUser(tx, user)
	s.commitRevision(tx)
	s.lg.Info("granted a role to a user", zap.String("user-name", r.User), zap.String("role-name", r.Role))
	return &pb.AuthUserGrantRoleResponse{}, nil
}

// UserRevokeRole takes a role from a user. The root user keeps the root
// role while auth is enabled.
func (s *Store) UserRevokeRole(r *pb.AuthUserRevokeRoleRequest) (*pb.AuthUserRevokeRoleResponse, error) {
	if s.IsAuthEnabled() && r.Name == rootUser && r.Role == rootRole {
		return nil, ErrInvalidAuthMgmt
	}
	tx, unlock := s.lockBatch()
	defer unlock()
	user := getUser(tx, r.Name)
	if user == nil {
		return nil, ErrUserNotFound
	}
	kept := withoutRole(user.Roles, r.Role)
	if len(kept) == len(user.Roles) {
		return nil, ErrRoleNotGranted
	}
	putUser(tx, &authpb.User{Name: user.Name, Password: user.Password, Options: user.Options, Roles: kept})
	s.commitRevision(tx)
	s.lg.Info("revoked a role from a user", zap.String("user-name", r.Name), zap.String("role-name", r.Role))
	return &pb.AuthUserRevokeRoleResponse{}, nil
}

// withoutRole returns roles minus role, nil when nothing is left (as etcd
// builds it, so the record encodes the same).
func withoutRole(roles []string, role string) []string {
	var kept []string
	for _, r := range roles {
		if r != role {
			kept = append(kept, r)
		}
	}
	return kept
}

// UserGet returns the roles of a user.
func (s *Store) UserGet(r *pb.AuthUserGetRequest) (*pb.AuthUserGetResponse, error) {
	user := s.readUser(r.Name)
	if user == nil {
		return nil, ErrUserNotFound
	}
	return &pb.AuthUserGetResponse{Roles: user.Roles}, nil
}

// UserList returns every user name in byte order.
func (s *Store) UserList(*pb.AuthUserListRequest) (*pb.AuthUserListResponse, error) {
	tx := s.backend().ReadTx()
	tx.RLock()
	users := allUsers(tx)
	tx.RUnlock()
	names := make([]string, len(users))
	for i, u := range users {
		names[i] = string(u.Name)
	}
	return &pb.AuthUserListResponse{Users: names}, nil
}

// HasRole reports whether user exists and has role; the apply step lets a
// user read a role it has (RoleGet) without admin rights.
func (s *Store) HasRole(user, role string) bool {
	u := s.readUser(user)
	return u != nil && slices.Contains(u.Roles, role)
}

func (s *Store) readUser(name string) *authpb.User {
	tx := s.backend().ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	return getUser(tx, name)
}
