package auth

import (
	"bytes"
	"slices"
	"sort"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
)

// rootPermission is what RoleGet reports for the root role, whatever it
// stores: read and write on every key.
func rootPermission() *authpb.Permission {
	return &authpb.Permission{PermType: authpb.Permission_READWRITE, Key: []byte{}, RangeEnd: []byte{0}}
}

// RoleAdd creates a role with no permissions.
func (s *Store) RoleAdd(r *pb.AuthRoleAddRequest) (*pb.AuthRoleAddResponse, error) {
	if r.Name == "" {
		return nil, ErrRoleEmpty
	}
	if len(r.Name) > maxNameBytes {
		return nil, ErrNameTooLong
	}
	tx, unlock := s.lockBatch()
	defer unlock()
	if getRole(tx, r.Name) != nil {
		return nil, ErrRoleAlreadyExist
	}
	putRole(tx, &authpb.Role{Name: []byte(r.Name)})
	s.commitRevision(tx)
	s.lg.Info("created a role", zap.String("role-name", r.Name))
	return &pb.AuthRoleAddResponse{}, nil
}

// RoleDelete deletes a role and takes it from every user that has it. The
// root role cannot be deleted while auth is enabled.
func (s *Store) RoleDelete(r *pb.AuthRoleDeleteRequest) (*pb.AuthRoleDeleteResponse, error) {
	if s.IsAuthEnabled() && r.Role == rootRole {
		return nil, ErrInvalidAuthMgmt
	}
	tx, unlock := s.lockBatch()
	defer unlock()
	if getRole(tx, r.Role) == nil {
		return nil, ErrRoleNotFound
	}
	deleteRole(tx, r.Role)
	for _, u := range allUsers(tx) {
		kept := withoutRole(u.Roles, r.Role)
		if len(kept) != len(u.Roles) {
			putUser(tx, &authpb.User{Name: u.Name, Password: u.Password, Options: u.Options, Roles: kept})
		}
	}
	s.commitRevision(tx)
	s.lg.Info("deleted a role", zap.String("role-name", r.Role))
	return &pb.AuthRoleDeleteResponse{}, nil
}

// RoleGrantPermission grants READ, WRITE or READWRITE on a key, a range or
// (range end "\x00") everything from a key on. A grant for the exact key and
// range end of an existing permission replaces its type; any other grant is
// added, the list staying sorted by key (ties in grant order). Like etcd,
// only the first permission with the same key is compared, so re-granting a
// range that sorts after another permission of its key adds a duplicate.
func (s *Store) RoleGrantPermission(r *pb.AuthRoleGrantPermissionRequest) (*pb.AuthRoleGrantPermissionResponse, error) {
	if r.Perm == nil {
		return nil, ErrPermissionNotGiven
	}
	if !isValidPermissionRange(r.Perm.Key, r.Perm.RangeEnd) {
		return nil, ErrInvalidAuthMgmt
	}
	tx, unlock := s.lockBatch()
	defer unlock()
	role := getRole(tx, r.Name)
	if role == nil {
		return nil, ErrRoleNotFound
	}
	role.KeyPermission = mergePermission(role.KeyPermission, r.Perm)
	putRole(tx, role)
	s.commitRevision(tx)
	s.lg.Info("granted/updated a permission to a role", zap.String("role-name", r.Name),
		zap.Stringer("permission", r.Perm.PermType), zap.ByteString("key", r.Perm.Key),
		zap.ByteString("range-end", r.Perm.RangeEnd))
	return &pb.AuthRoleGrantPermissionResponse{}, nil
}

func mergePermission(perms []*authpb.Permission, p *authpb.Permission) []*authpb.Permission {
	idx := sort.Search(len(perms), func(i int) bool { return bytes.Compare(perms[i].Key, p.Key) >= 0 })
	if idx < len(perms) && bytes.Equal(perms[idx].Key, p.Key) && bytes.Equal(perms[idx].RangeEnd, p.RangeEnd) {
		perms[idx].PermType = p.PermType
		return perms
	}
	perms = append(perms, &authpb.Permission{Key: p.Key, RangeEnd: p.RangeEnd, PermType: p.PermType})
	slices.SortStableFunc(perms, func(a, b *authpb.Permission) int { return bytes.Compare(a.Key, b.Key) })
	return perms
}

// RoleRevokePermission removes every permission of the role with exactly
// this key and range end (nil and empty are the same).
func (s *Store) RoleRevokePermission(r *pb.AuthRoleRevokePermissionRequest) (*pb.AuthRoleRevokePermissionResponse, error) {
	tx, unlock := s.lockBatch()
	defer unlock()
	role := getRole(tx, r.Role)
	if role == nil {
		return nil, ErrRoleNotFound
	}
	updated := &authpb.Role{Name: role.Name}
	for _, p := range role.KeyPermission {
		if !bytes.Equal(p.Key, r.Key) || !bytes.Equal(p.RangeEnd, r.RangeEnd) {
			updated.KeyPermission = append(updated.KeyPermission, p)
		}
	}
	if len(updated.KeyPermission) == len(role.KeyPermission) {
		return nil, ErrPermissionNotGranted
	}
	putRole(tx, updated)
	s.commitRevision(tx)
	s.lg.Info("revoked a permission on range", zap.String("role-name", r.Role),
		zap.ByteString("key", r.Key), zap.ByteString("range-end", r.RangeEnd))
	return &pb.AuthRoleRevokePermissionResponse{}, nil
}

// RoleGet returns a role's permissions; for root, read and write on all keys.
func (s *Store) RoleGet(r *pb.AuthRoleGetRequest) (*pb.AuthRoleGetResponse, error) {
	tx := s.backend().ReadTx()
	tx.RLock()
	role := getRole(tx, r.Role)
	tx.RUnlock()
	if role == nil {
		return nil, ErrRoleNotFound
	}
	if string(role.Name) == rootRole {
		return &pb.AuthRoleGetResponse{Perm: []*authpb.Permission{rootPermission()}}, nil
	}
	return &pb.AuthRoleGetResponse{Perm: role.KeyPermission}, nil
}

// RoleList returns every role name in byte order.
func (s *Store) RoleList(*pb.AuthRoleListRequest) (*pb.AuthRoleListResponse, error) {
	tx := s.backend().ReadTx()
	tx.RLock()
	roles := allRoles(tx)
	tx.RUnlock()
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r.Name)
	}
	return &pb.AuthRoleListResponse{Roles: names}, nil
}
