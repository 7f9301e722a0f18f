package mvcc

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/storage/backend"
)

const (
	// defaultCompactionBatchLimit is etcd's: how many key-bucket entries one
	// compaction round examines while holding the batch lock.
	defaultCompactionBatchLimit = 1000
	// defaultCompactionSleepInterval is etcd's pause between rounds.
	defaultCompactionSleepInterval = 10 * time.Millisecond
)

// StoreConfig tunes a Store.
type StoreConfig struct {
	// CompactionBatchLimit is how many key-bucket entries one compaction
	// round examines under the batch lock; 0 means etcd's 1000.
	CompactionBatchLimit int
	// CompactionSleepInterval is the pause between compaction rounds, during
	// which writers get the batch lock; 0 means etcd's 10ms.
	CompactionSleepInterval time.Duration
	// IndexCheckpoint, when set, is the path of a key index checkpoint
	// (see checkpoint.go) that New loads instead of rebuilding the index
	// from the key bucket, if it describes the backend's current commit.
	// New removes the file either way.
	IndexCheckpoint string
}

// Store is the multi-version key-value store of one member. It implements KV.
type Store struct {
	lg    *zap.Logger
	cfg   StoreConfig
	b     backend.Backend
	index *treeIndex

	// txnMu is held shared by every open transaction and exclusively by
	// Compact, so no transaction sees the compacted revision move.
	txnMu sync.RWMutex

	// revMu guards currentRev and compactMainRev. The writer bumps
	// currentRev while still holding the batch lock, so a reader that sees
	// the new revision also sees its writes in the backend.
	revMu          sync.RWMutex
	currentRev     int64 // revision of the last transaction that changed something; 1 when empty
	compactMainRev int64 // revision of the last scheduled compaction; -1 if none

	// restoredLeases are the leased live keys New found, until the lessor
	// takes them (TakeRestoredLeases).
	restoredLeases []LeasedKey

	compactor *compactor
	hashes    compactionHashes // what the recent compactions computed
	watch     *watchHub        // the watchers; see NewWatchStream
	closeOnce sync.Once
}

var _ KV = (*Store)(nil)

// New opens the store on b: it rebuilds the key index from the key bucket,
// restores the current and compacted revisions and resumes a compaction that
// was scheduled but not finished. lg may be nil. It panics if the key bucket
// cannot be decoded, as etcd does: the member cannot serve from such a db.
func New(lg *zap.Logger, b backend.Backend, cfg StoreConfig) *Store {
	if lg == nil {
		lg = zap.NewNop()
	}
	if cfg.CompactionBatchLimit <= 0 {
		cfg.CompactionBatchLimit = defaultCompactionBatchLimit
	}
	if cfg.CompactionSleepInterval <= 0 {
		cfg.CompactionSleepInterval = defaultCompactionSleepInterval
	}
	s := &Store{
		lg:             lg,
		cfg:            cfg,
		b:              b,
		index:          newTreeIndex(),
		currentRev:     1,
		compactMainRev: -1,
	}
	s.compactor = newCompactor(s)
	if err := s.restore(); err != nil {
		lg.Panic("failed to restore the mvcc store from the backend", zap.Error(err))
	}
	s.watch = newWatchHub(s, s.currentRev)
	return s
}

// Config is the store's tuning as in effect, defaults filled in.
func (s *Store) Config() StoreConfig { return s.cfg }

// Rev returns the current revision.
func (s *Store) Rev() int64 {
	s.revMu.RLock()
	defer s.revMu.RUnlock()
	return s.currentRev
}

// FirstRev returns the compacted revision, 0 if the store was never compacted.
func (s *Store) FirstRev() int64 {
	s.revMu.RLock()
	defer s.revMu.RUnlock()
	return max(s.compactMainRev, 0)
}

// Close stops the background compaction between two of its rounds and the
// watchers' background catch-up, and waits for both. The done channel of an
// interrupted compaction is never closed (the removal did not finish); New
// resumes it on the next start. The caller must not hold a transaction.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.compactor.stop()
		s.watch.stop()
	})
	return nil
}

// restore rebuilds the in-memory state from the backend; New calls it before
// the store is shared, so it needs no transaction lock.
func (s *Store) restore() error {
	tx := s.b.ReadTx()
	tx.RLock()
	finished, finishedFound := readRevMeta(tx, backend.MetaFinishedCompactRev)
	scheduled, _ := readRevMeta(tx, backend.MetaScheduledCompactRev)
	tx.RUnlock()

	if finishedFound {
		s.compactMainRev = finished
	}
	rebuilt, loaded := indexRebuild{}, false
	if s.cfg.IndexCheckpoint != "" {
		rebuilt, loaded = s.loadIndexCheckpoint(s.cfg.IndexCheckpoint)
	}
	if !loaded {
		var err error
		if rebuilt, err = rebuildIndex(s.lg, s.b.ReadTx(), s.index); err != nil {
			return err
		}
	}
	lastRev := rebuilt.lastRev
	s.restoredLeases = rebuilt.leased
	// The newest revisions may all have been compacted away (deleted keys),
	// and a crash may have lost the finished mark after the scheduled one:
	// never go back behind a compaction.
	s.currentRev = max(lastRev, s.compactMainRev, scheduled, 1)
	s.lg.Info("restored mvcc store",
		zap.Int64("current-revision", s.currentRev),
		zap.Int64("compact-revision", s.compactMainRev),
		zap.Int("keys", s.index.Len()))

	if scheduled > 0 && scheduled > s.compactMainRev {
		s.lg.Info("resuming scheduled compaction", zap.Int64("scheduled-compact-revision", scheduled))
		if _, err := s.compactLocked(scheduled); err != nil {
			s.lg.Warn("failed to resume compaction", zap.Int64("revision", scheduled), zap.Error(err))
		}
	}
	return nil
}

// readRevMeta reads a revision stored in the meta bucket.
func readRevMeta(tx backend.UnsafeReader, name []byte) (main int64, found bool) {
	_, vals := tx.UnsafeRange(backend.BucketMeta, name, nil, 0)
	if len(vals) == 0 || len(vals[0]) < revBytesLen {
		return 0, false
	}
	return BytesToRev(vals[0]).Main, true
}

// putRevMeta stores main as revision bytes in the meta bucket, as etcd does.
func putRevMeta(tx backend.UnsafeWriter, name []byte, main int64) {
	tx.UnsafePut(backend.BucketMeta, name, RevToBytes(Revision{Main: main}))
}

// TakeRestoredLeases returns, once, every live key whose newest revision
// names a lease as New found them in the backend, in key order, so the
// lessor can re-attach them without reading the store again; later calls
// return nil. Call it before the store is written to.
func (s *Store) TakeRestoredLeases() []LeasedKey {
	s.revMu.Lock()
	defer s.revMu.Unlock()
	leased := s.restoredLeases
	s.restoredLeases = nil
	return leased
}

// CompactRev returns the revision of the last scheduled compaction, -1 if
// the store was never compacted (etcd's compact_revision gauge).
func (s *Store) CompactRev() int64 {
	s.revMu.RLock()
	defer s.revMu.RUnlock()
	return s.compactMainRev
}

// KeyCount is the number of keys in the index, deleted keys not yet
// compacted away included.
func (s *Store) KeyCount() int { return s.index.Len() }
