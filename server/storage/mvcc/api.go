package mvcc

import (
	"context"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// RangeOptions narrow a Range.
type RangeOptions struct {
	Limit int64 // at most this many KVs (0 = all); Count is unaffected
	Rev   int64 // read at this revision; <= 0 means the current revision
	Count bool  // only count: KVs stays empty
}

// RangeResult is what a Range found.
type RangeResult struct {
	KVs   []*mvccpb.KeyValue // in key order, at most Limit of them
	Rev   int64              // the view's revision (the txn's current revision), also for reads at an older RangeOptions.Rev, as etcd's response header reports
	Count int                // number of keys in the range at the revision read, ignoring Limit
}

// ReadView reads the store at one point in time.
type ReadView interface {
	// FirstRev is the first revision still readable: the compacted revision (0 if never compacted).
	FirstRev() int64
	// Rev is the store's revision when the view was opened.
	Rev() int64
	// Range returns the live keys in [key, end) at ro.Rev. end == nil means
	// the single key; end == "\x00" means every key >= key.
	// end of "" (non-nil, empty) means the same as "\x00".
	// Errors: errs.ErrCompacted if 0 < ro.Rev < compacted revision (the
	// compacted revision itself stays readable, as in etcd),
	// errs.ErrFutureRev if ro.Rev > Rev(). The result is nil on error.
	Range(ctx context.Context, key, end []byte, ro RangeOptions) (*RangeResult, error)
}

// TxnRead is a read transaction; End releases it.
type TxnRead interface {
	ReadView
	End()
}

// WriteView changes the store. All changes of one TxnWrite share one main
// revision (Rev()+1), with sub revisions counting up; a txn that changes
// nothing does not bump the revision.
type WriteView interface {
	// DeleteRange deletes the live keys in [key, end) and returns how many it
	// deleted and the store revision after the txn (Rev()+1 if n > 0, else Rev()
	// unless earlier ops of this txn already changed something).
	DeleteRange(key, end []byte) (n, rev int64)
	// Put sets key to value with lease and returns the revision of the txn.
	Put(key, value []byte, lease int64) (rev int64)
}

// TxnWrite is a read-write transaction; End commits it to the backend's
// batch (durable on the member's next backend commit) and unlocks.
type TxnWrite interface {
	TxnRead
	WriteView
	// Changes returns the KVs written so far (deletes as tombstone KVs with only Key and ModRevision).
	Changes() []*mvccpb.KeyValue
}

// KeyValueHash is the result of HashByRev, as Maintenance.HashKV reports it.
type KeyValueHash struct {
	Hash            uint32
	CompactRevision int64
	Revision        int64
}

// KV is the multi-version key-value store.
type KV interface {
	ReadView
	WriteView
	// Read opens a read transaction at the current revision.
	Read() TxnRead
	// Write opens the (single) write transaction.
	Write() TxnWrite
	// Compact schedules removal of every revision superseded at rev. It
	// records the compaction in the same batch as the caller's apply and
	// returns a channel closed when the physical removal is done (done in
	// batches by a background goroutine that never holds the write lock long).
	// Errors: errs.ErrCompacted if rev <= compacted revision, errs.ErrFutureRev
	// if rev > current revision.
	Compact(rev int64) (<-chan struct{}, error)
	// HashByRev hashes the key space as etcd's HashKV does, at rev (0 =
	// current); a recent compaction's revision is answered with the hash
	// that compaction computed.
	HashByRev(rev int64) (KeyValueHash, int64, error)
	// Close stops background work.
	Close() error
}
