package auth

import (
	"bytes"
	"fmt"

	"go.etcd.io/etcd/api/v3/authpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/storage/backend"
)

// Keys of the auth bucket and the values of authEnabled, as etcd writes them.
var (
	keyAuthEnabled  = []byte("authEnabled")
	keyAuthRevision = []byte("authRevision")

	valueEnabled  = []byte{1}
	valueDisabled = []byte{0}
)

func readEnabled(tx backend.UnsafeReader) bool {
	_, vals := tx.UnsafeRange(backend.BucketAuth, keyAuthEnabled, nil, 0)
	return len(vals) == 1 && bytes.Equal(vals[0], valueEnabled)
}

func writeEnabled(tx backend.UnsafeWriter, enabled bool) {
	v := valueDisabled
	if enabled {
		v = valueEnabled
	}
	tx.UnsafePut(backend.BucketAuth, keyAuthEnabled, bytes.Clone(v))
}

// readRevision returns 0 when the revision was never written, as etcd does.
func readRevision(tx backend.UnsafeReader) uint64 {
	rev, _ := backend.ReadUint64(tx, backend.BucketAuth, keyAuthRevision)
	return rev
}

func writeRevision(tx backend.UnsafeWriter, rev uint64) {
	backend.PutUint64(tx, backend.BucketAuth, keyAuthRevision, rev)
}

// getRecord returns the record of that name in bucket (a user or a role,
// what says which), or nil if there is none.
func getRecord[T any, P interface {
	*T
	proto.Message
}](tx backend.UnsafeReader, bucket []byte, what, name string) P {
	_, vals := tx.UnsafeRange(bucket, []byte(name), nil, 0)
	if len(vals) == 0 {
		return nil
	}
	rec := P(new(T))
	mustUnmarshal(vals[0], rec, what+" "+name)
	return rec
}

// getUser returns the user, or nil if there is none of that name.
func getUser(tx backend.UnsafeReader, name string) *authpb.User {
	return getRecord[authpb.User](tx, backend.BucketAuthUsers, "user", name)
}

// allUsers returns every user in name order.
func allUsers(tx backend.UnsafeReader) []*authpb.User {
	var users []*authpb.User
	_ = tx.UnsafeForEach(backend.BucketAuthUsers, func(k, v []byte) error {
		u := &authpb.User{}
		mustUnmarshal(v, u, "user "+string(k))
		users = append(users, u)
		return nil
	})
	return users
}

func putUser(tx backend.UnsafeWriter, u *authpb.User) {
	tx.UnsafePut(backend.BucketAuthUsers, bytes.Clone(u.Name), mustMarshal(u))
}

func deleteUser(tx backend.UnsafeWriter, name string) {
	tx.UnsafeDelete(backend.BucketAuthUsers, []byte(name))
}

// getRole returns the role, or nil if there is none of that name.
func getRole(tx backend.UnsafeReader, name string) *authpb.Role {
	return getRecord[authpb.Role](tx, backend.BucketAuthRoles, "role", name)
}

// allRoles returns the roles in name order. Like etcd it lists the range
// [0x00, 0xff) only, so a name starting with byte 0xff is not listed.
func allRoles(tx backend.UnsafeReader) []*authpb.Role {
	_, vals := tx.UnsafeRange(backend.BucketAuthRoles, []byte{0}, []byte{0xff}, 0)
	roles := make([]*authpb.Role, len(vals))
	for i, v := range vals {
		roles[i] = &authpb.Role{}
		mustUnmarshal(v, roles[i], "role")
	}
	return roles
}

func putRole(tx backend.UnsafeWriter, r *authpb.Role) {
	tx.UnsafePut(backend.BucketAuthRoles, bytes.Clone(r.Name), mustMarshal(r))
}

func deleteRole(tx backend.UnsafeWriter, name string) {
	tx.UnsafeDelete(backend.BucketAuthRoles, []byte(name))
}

// A record that does not decode means a corrupt db, which etcd treats as
// fatal too. proto.Unmarshal copies bytes fields, so the result outlives
// the transaction.
func mustUnmarshal(b []byte, m proto.Message, what string) {
	if err := proto.Unmarshal(b, m); err != nil {
		panic(fmt.Sprintf("auth: cannot decode %s: %v", what, err))
	}
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("auth: cannot encode %T: %v", m, err))
	}
	return b
}
