package etcdserver

import (
	"slices"
	"sync"

	"github.com/cairnkv/cairn/server/membership"
)

// removedIDCache answers IsIDRemoved for the peer transport, which asks for
// every message a peer sends, without reading the members_removed bucket
// (a read transaction, an iteration and a sort) each time. Whatever changes
// the bucket (an applied conf change, an installed snapshot) calls
// invalidate once the change is visible to readers; a load that raced with
// it stores nothing, so an answer is never older than the last change.
type removedIDCache struct {
	mu      sync.Mutex
	gen     uint64 // bumped by invalidate
	valid   bool
	removed []uint64 // sorted
}

func (c *removedIDCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.valid, c.removed = false, nil
}

// isRemoved reports whether id is in the removed list, from the cache or
// else from load (ok false: the list could not be read, nothing is
// cached and id counts as not removed, as the bucket read did).
func (c *removedIDCache) isRemoved(id uint64, load func() (ids []uint64, ok bool)) bool {
	c.mu.Lock()
	if c.valid {
		_, found := slices.BinarySearch(c.removed, id)
		c.mu.Unlock()
		return found
	}
	gen := c.gen
	c.mu.Unlock()
	ids, ok := load()
	if !ok {
		return false
	}
	ids = slices.Sorted(slices.Values(ids))
	c.mu.Lock()
	if c.gen == gen {
		c.valid, c.removed = true, ids
	}
	c.mu.Unlock()
	_, found := slices.BinarySearch(ids, id)
	return found
}

// removedIDs reads the members_removed bucket; false once the stores are
// closed or the bucket does not read.
func (st *stores) removedIDs() ([]uint64, bool) {
	if !st.rlock() {
		return nil, false
	}
	defer st.mu.RUnlock()
	tx := st.be.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	ids, err := membership.LoadRemoved(tx)
	return ids, err == nil
}

// isIDRemoved is raftPeer's view of the removed list.
func (s *Server) isIDRemoved(id uint64) bool { return s.removed.isRemoved(id, s.stores.removedIDs) }

// membersChanged drops what is cached of the members buckets: a conf change
// was applied or a snapshot installed.
func (s *Server) membersChanged() {
	s.leases.peersChanged()
	s.removed.invalidate()
}
