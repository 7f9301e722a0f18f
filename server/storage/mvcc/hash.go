package mvcc

import (
	"cmp"
	"hash"
	"hash/crc32"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/metrics"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// HashByRev hashes the key space as etcd's Maintenance.HashKV does, so
// members of a mixed cairn/etcd cluster and tools can compare the results.
// rev 0 means the current revision. It also returns the current revision.
// The hash covers every key-bucket entry with a revision in (compacted, rev]
// plus, among older ones, those a compaction at rev would keep. For the
// revision of a recent compaction it returns the hash that compaction
// computed (see Hashes), as etcd does: the compaction hash check of the
// leader compares exactly those.
func (s *Store) HashByRev(rev int64) (KeyValueHash, int64, error) {
	if h, ok := s.hashes.byRev(rev); ok {
		return h, s.Rev(), nil
	}
	return s.hashKV(rev)
}

// hashKV computes HashByRev's hash from the backend.
func (s *Store) hashKV(rev int64) (KeyValueHash, int64, error) {
	s.txnMu.RLock()
	defer s.txnMu.RUnlock()
	s.revMu.RLock()
	compactRev, currentRev := s.compactMainRev, s.currentRev
	s.revMu.RUnlock()

	if rev > 0 && rev < compactRev {
		return KeyValueHash{}, 0, errs.ErrCompacted
	}
	if rev > 0 && rev > currentRev {
		return KeyValueHash{}, currentRev, errs.ErrFutureRev
	}
	if rev == 0 {
		rev = currentRev
	}
	keep := s.index.Keep(rev)
	start := time.Now()
	defer func() { metrics.HashRevSeconds.Observe(time.Since(start).Seconds()) }()

	tx := s.b.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	h := newKVHasher(compactRev, rev, keep)
	err := tx.UnsafeForEach(backend.BucketKey, func(k, v []byte) error {
		h.write(k, v)
		return nil
	})
	return h.sum(), currentRev, err
}

// kvHasher applies etcd's selection rule to key-bucket entries visited in key
// (= revision) order and hashes the chosen keys and values.
type kvHasher struct {
	crc        hash.Hash32
	compactRev int64
	rev        int64
	keep       *revisionSet
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func newKVHasher(compactRev, rev int64, keep *revisionSet) *kvHasher {
	h := &kvHasher{crc: crc32.New(castagnoli), compactRev: compactRev, rev: rev, keep: keep}
	h.crc.Write(backend.BucketKey)
	return h
}

func (h *kvHasher) write(k, v []byte) {
	if h.selects(k) {
		h.crc.Write(k)
		h.crc.Write(v)
	}
}

// selects is etcd's rule, quirks included (they are part of the value
// compared across members).
func (h *kvHasher) selects(k []byte) bool {
	kr := BytesToRev(k)
	if kr.Main > h.rev {
		return false
	}
	// At or below the compaction only kept revisions count, unless nothing
	// is kept at all, in which case etcd hashes whatever is still there.
	if kr.Main <= h.compactRev && h.keep.len() > 0 && !h.keep.has(kr) {
		return false
	}
	// etcd <= 3.5.15 removed a tombstone at exactly the compacted revision and
	// newer versions keep it; skipping it makes both hash alike.
	return !(kr.Main == h.compactRev && IsTombstone(k))
}

func (h *kvHasher) sum() KeyValueHash {
	return KeyValueHash{Hash: h.crc.Sum32(), CompactRevision: h.compactRev, Revision: h.rev}
}

// maxCompactionHashes is how many compaction hashes a store keeps (etcd's
// hashStorageMaxSize).
const maxCompactionHashes = 10

// compactionHashes are the hashes of the key space that the last
// compactions computed, by ascending Revision (the compacted revision).
type compactionHashes struct {
	mu     sync.RWMutex
	hashes []KeyValueHash
}

func (c *compactionHashes) store(lg *zap.Logger, h KeyValueHash) {
	lg.Info("storing new hash",
		zap.Uint32("hash", h.Hash),
		zap.Int64("revision", h.Revision),
		zap.Int64("compact-revision", h.CompactRevision))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hashes = append(c.hashes, h)
	slices.SortStableFunc(c.hashes, func(a, b KeyValueHash) int { return cmp.Compare(a.Revision, b.Revision) })
	if len(c.hashes) > maxCompactionHashes {
		c.hashes = slices.Clone(c.hashes[len(c.hashes)-maxCompactionHashes:])
	}
}

func (c *compactionHashes) byRev(rev int64) (KeyValueHash, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, h := range c.hashes {
		if h.Revision == rev {
			return h, true
		}
	}
	return KeyValueHash{}, false
}

// Hashes returns the hashes the recent compactions computed (at most 10),
// by ascending compacted revision. Each one is HashByRev at its Revision as
// it was just before that compaction: CompactRevision is the compaction
// before it. A compaction whose predecessor had not finished stores none,
// since its hash would not cover every revision since that one.
func (s *Store) Hashes() []KeyValueHash {
	s.hashes.mu.RLock()
	defer s.hashes.mu.RUnlock()
	return slices.Clone(s.hashes.hashes)
}
