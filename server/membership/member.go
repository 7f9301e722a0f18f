package membership

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/cairnkv/cairn/server/storage/backend"
)

// Member is one member of the cluster. Its JSON form is the value etcd keeps
// in the backend's members bucket.
type Member struct {
	ID         uint64   `json:"id"`
	PeerURLs   []string `json:"peerURLs"`
	IsLearner  bool     `json:"isLearner,omitempty"`
	Name       string   `json:"name,omitempty"`
	ClientURLs []string `json:"clientURLs,omitempty"`
}

// ChangeContext is the context of a membership conf change, etcd's form: the
// member, flat, and whether an AddNode promotes a learner rather than adding
// a member. etcd's leaders send a promotion as {"id":N,"peerURLs":null,
// "isPromote":true}, so the member fields of a promotion must not be taken
// for the member's new state.
type ChangeContext struct {
	Member
	IsPromote bool `json:"isPromote,omitempty"`
}

// memberKey is etcd's key for a member: its ID in lower-case hex, unpadded.
func memberKey(id uint64) []byte { return []byte(strconv.FormatUint(id, 16)) }

// Save writes m to the members bucket. The caller holds the batch tx lock.
func Save(tx backend.UnsafeWriter, m *Member) error {
	v, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("membership: encode member %x: %w", m.ID, err)
	}
	tx.UnsafePut(backend.BucketMembers, memberKey(m.ID), v)
	return nil
}

// Remove deletes member id and records it in members_removed, so it can
// never rejoin with the same ID.
func Remove(tx backend.UnsafeWriter, id uint64) {
	tx.UnsafeDelete(backend.BucketMembers, memberKey(id))
	tx.UnsafePut(backend.BucketMembersRemoved, memberKey(id), []byte("removed"))
}

// Load returns every member in the members bucket, ordered by ID.
func Load(tx backend.UnsafeReader) ([]*Member, error) {
	var members []*Member
	err := tx.UnsafeForEach(backend.BucketMembers, func(k, v []byte) error {
		m := &Member{}
		if err := json.Unmarshal(v, m); err != nil {
			return fmt.Errorf("membership: decode member %s: %w", k, err)
		}
		members = append(members, m)
		return nil
	})
	sort.Slice(members, func(i, j int) bool { return members[i].ID < members[j].ID })
	return members, err
}

// LoadRemoved returns the IDs of removed members, ascending.
func LoadRemoved(tx backend.UnsafeReader) ([]uint64, error) {
	var ids []uint64
	err := tx.UnsafeForEach(backend.BucketMembersRemoved, func(k, _ []byte) error {
		id, err := strconv.ParseUint(string(k), 16, 64)
		if err != nil {
			return fmt.Errorf("membership: bad removed member key %q: %w", k, err)
		}
		ids = append(ids, id)
		return nil
	})
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, err
}
