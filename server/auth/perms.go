package auth

import (
	"bytes"
	"slices"

	"go.etcd.io/etcd/api/v3/authpb"

	"github.com/cairnkv/cairn/server/storage/backend"
)

// Key ranges follow etcd's conventions:
//   - a nil or empty end means the single key;
//   - an end of "\x00" means "to the end of the keyspace";
//   - otherwise the range is [key, end).
//
// Internally an interval is [begin, end) where an empty end stands for +inf,
// the largest value ("affine" order, as etcd's adt.BytesAffineComparable).

// interval is a half-open key interval; an empty end is +inf.
type interval struct{ begin, end []byte }

// affineCompare orders byte strings with the empty string as +inf.
func affineCompare(a, b []byte) int {
	switch {
	case len(a) == 0 && len(b) == 0:
		return 0
	case len(a) == 0:
		return 1
	case len(b) == 0:
		return -1
	}
	return bytes.Compare(a, b)
}

func isOpenEnded(end []byte) bool { return len(end) == 1 && end[0] == 0 }

// pointInterval is the single key k: [k, k+"\x00").
func pointInterval(k []byte) interval {
	return interval{begin: k, end: append(bytes.Clone(k), 0)}
}

// permInterval is the interval a stored permission grants.
func permInterval(p *authpb.Permission) interval {
	switch {
	case len(p.RangeEnd) == 0:
		return pointInterval(p.Key)
	case isOpenEnded(p.RangeEnd):
		return interval{begin: p.Key}
	default:
		return interval{begin: p.Key, end: p.RangeEnd}
	}
}

// isValidPermissionRange is etcd's rule for RoleGrantPermission: a non-empty
// key, and an end that is empty, "\x00" or above the key.
func isValidPermissionRange(key, end []byte) bool {
	if len(key) == 0 {
		return false
	}
	if len(end) == 0 || isOpenEnded(end) {
		return true
	}
	return affineCompare(key, end) < 0
}

// rangeSet is a union of intervals, kept sorted, disjoint and with no two
// touching (adjacent intervals are merged, as etcd's interval tree treats
// them as contiguous).
type rangeSet []interval

func newRangeSet(ivs []interval) rangeSet {
	slices.SortFunc(ivs, func(a, b interval) int { return affineCompare(a.begin, b.begin) })
	var set rangeSet
	for _, iv := range ivs {
		last := len(set) - 1
		if last >= 0 && affineCompare(iv.begin, set[last].end) <= 0 {
			if affineCompare(iv.end, set[last].end) > 0 {
				set[last].end = iv.end
			}
			continue
		}
		set = append(set, iv)
	}
	return set
}

// covering returns the interval that could hold key: the last one that
// begins at or before it. The intervals are disjoint, so no other can.
func (s rangeSet) covering(key []byte) (interval, bool) {
	i, _ := slices.BinarySearchFunc(s, key, func(iv interval, k []byte) int {
		if affineCompare(iv.begin, k) <= 0 {
			return -1
		}
		return 1
	})
	if i == 0 {
		return interval{}, false
	}
	return s[i-1], true
}

// containsKey reports whether some interval holds key.
func (s rangeSet) containsKey(key []byte) bool {
	iv, ok := s.covering(key)
	return ok && affineCompare(key, iv.end) < 0
}

// containsRange reports whether [begin, end) lies inside the union. A range
// whose end is not above its begin selects no key; etcd's interval tree then
// permits it exactly when begin itself is permitted, and so does this.
func (s rangeSet) containsRange(begin, end []byte) bool {
	if affineCompare(begin, end) >= 0 {
		return s.containsKey(begin)
	}
	iv, ok := s.covering(begin)
	return ok && affineCompare(end, iv.end) <= 0
}

// userPerms is what the permission checks need to know about one user.
type userPerms struct {
	root        bool
	read, write rangeSet
}

// permCache holds userPerms for every user; it is rebuilt whole on every
// change and never modified afterwards, so readers need no lock.
type permCache map[string]*userPerms

func buildPermCache(tx backend.UnsafeReader) permCache {
	cache := make(permCache)
	roles := make(map[string]*authpb.Role)
	for _, u := range allUsers(tx) {
		cache[string(u.Name)] = buildUserPerms(tx, u, roles)
	}
	return cache
}

// buildUserPerms merges the permissions of u's roles; roles caches the roles
// already read. A granted role that does not exist grants nothing.
func buildUserPerms(tx backend.UnsafeReader, u *authpb.User, roles map[string]*authpb.Role) *userPerms {
	var read, write []interval
	for _, name := range u.Roles {
		role, seen := roles[name]
		if !seen {
			role = getRole(tx, name)
			roles[name] = role
		}
		if role == nil {
			continue
		}
		for _, p := range role.KeyPermission {
			iv := permInterval(p)
			if p.PermType == authpb.Permission_READ || p.PermType == authpb.Permission_READWRITE {
				read = append(read, iv)
			}
			if p.PermType == authpb.Permission_WRITE || p.PermType == authpb.Permission_READWRITE {
				write = append(write, iv)
			}
		}
	}
	return &userPerms{root: hasRootRole(u), read: newRangeSet(read), write: newRangeSet(write)}
}

// permits checks one request range against set: a single key when end is
// empty, else [key, end) with "\x00" meaning to the end of the keyspace.
func permits(set rangeSet, key, end []byte) bool {
	if len(end) == 0 {
		return set.containsKey(key)
	}
	if isOpenEnded(end) {
		end = nil
	}
	return set.containsRange(key, end)
}

// hasRootRole relies on u.Roles being sorted, as UserGrantRole keeps it.
func hasRootRole(u *authpb.User) bool {
	_, found := slices.BinarySearch(u.Roles, rootRole)
	return found
}
