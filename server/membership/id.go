// Package membership owns the members of a cluster: their IDs, names and
// URLs, how IDs are derived (exactly as etcd derives them, so that a cairn
// member and an etcd member configured alike agree on every ID), and how
// members are kept in the backend's members buckets.
package membership

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"time"
)

// ComputeMemberID derives a member ID from its peer URLs and the cluster
// token; when now is non-nil (runtime MemberAdd) its Unix second is mixed in
// so a re-added URL gets a new ID.
func ComputeMemberID(peerURLs []string, token string, now *time.Time) uint64 {
	urls := append([]string(nil), peerURLs...)
	sort.Strings(urls)
	b := []byte(strings.Join(urls, ""))
	b = append(b, token...)
	if now != nil {
		b = append(b, fmt.Sprintf("%d", now.Unix())...)
	}
	sum := sha1.Sum(b)
	return binary.BigEndian.Uint64(sum[:8])
}

// ComputeClusterID derives the cluster ID from the IDs of its initial members.
func ComputeClusterID(memberIDs []uint64) uint64 {
	ids := append([]uint64(nil), memberIDs...)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	b := make([]byte, 8*len(ids))
	for i, id := range ids {
		binary.BigEndian.PutUint64(b[8*i:], id)
	}
	sum := sha1.Sum(b)
	return binary.BigEndian.Uint64(sum[:8])
}
