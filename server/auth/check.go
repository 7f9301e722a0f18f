package auth

// The permission checks run in the apply step, against the state every
// member has reached at the same log position, so all members decide alike.
// The API layer may call them too (serializable reads, watches), reading the
// state the member has applied so far.

// IsRangePermitted checks that ai may read key (end empty) or [key, end).
func (s *Store) IsRangePermitted(ai AuthInfo, key, end []byte) error {
	return s.isOpPermitted(ai, key, end, false)
}

// IsPutPermitted checks that ai may write key.
func (s *Store) IsPutPermitted(ai AuthInfo, key []byte) error {
	return s.isOpPermitted(ai, key, nil, true)
}

// IsDeleteRangePermitted checks that ai may write key (end empty) or
// [key, end).
func (s *Store) IsDeleteRangePermitted(ai AuthInfo, key, end []byte) error {
	return s.isOpPermitted(ai, key, end, true)
}

// IsAdminPermitted checks that ai's user has the root role. Unlike the key
// checks it does not compare revisions, as in etcd.
func (s *Store) IsAdminPermitted(ai AuthInfo) error {
	if !s.IsAuthEnabled() {
		return nil
	}
	if ai.Username == "" {
		return ErrUserEmpty
	}
	perms := s.userPerms(ai.Username)
	if perms == nil {
		return ErrUserNotFound
	}
	if !perms.root {
		return ErrPermissionDenied
	}
	return nil
}

func (s *Store) isOpPermitted(ai AuthInfo, key, end []byte, write bool) error {
	if !s.IsAuthEnabled() {
		return nil
	}
	// A header without auth info has revision 0: no user was given.
	if ai.Revision == 0 {
		return ErrUserEmpty
	}
	if ai.Revision < s.Revision() {
		return ErrAuthOldRevision
	}
	perms := s.userPerms(ai.Username)
	if perms == nil {
		return ErrPermissionDenied
	}
	if perms.root {
		return nil
	}
	set := perms.read
	if write {
		set = perms.write
	}
	if !permits(set, key, end) {
		return ErrPermissionDenied
	}
	return nil
}

// userPerms returns the cached permissions of user, nil if there is no such
// user.
func (s *Store) userPerms(user string) *userPerms {
	cache := s.perms.Load()
	if cache == nil {
		return nil
	}
	return (*cache)[user]
}
