package backend

import "io"

// Bucket names of etcd v3.7's bbolt schema. A db written by cairn opens with
// etcd's tools and the reverse, so these names are part of the disk format.
var (
	BucketKey            = []byte("key")
	BucketMeta           = []byte("meta")
	BucketLease          = []byte("lease")
	BucketAlarm          = []byte("alarm")
	BucketCluster        = []byte("cluster")
	BucketMembers        = []byte("members")
	BucketMembersRemoved = []byte("members_removed")
	BucketAuth           = []byte("auth")
	BucketAuthUsers      = []byte("authUsers")
	BucketAuthRoles      = []byte("authRoles")
)

// AllBuckets lists every bucket Open creates.
var AllBuckets = [][]byte{
	BucketKey, BucketMeta, BucketLease, BucketAlarm, BucketCluster,
	BucketMembers, BucketMembersRemoved, BucketAuth, BucketAuthUsers, BucketAuthRoles,
}

// Keys of the meta bucket.
var (
	MetaConsistentIndex     = []byte("consistent_index")    // 8 bytes big endian
	MetaTerm                = []byte("term")                // 8 bytes big endian
	MetaScheduledCompactRev = []byte("scheduledCompactRev") // revision bytes
	MetaFinishedCompactRev  = []byte("finishedCompactRev")  // revision bytes
	MetaConfState           = []byte("confState")           // JSON of raftpb.ConfState
	MetaStorageVersion      = []byte("storageVersion")      // e.g. "3.7"
)

// UnsafeReader reads inside a transaction the caller already holds.
// Returned slices are valid only until the transaction lock is released.
type UnsafeReader interface {
	// UnsafeRange returns up to limit (0 = all) pairs with key in [key, endKey),
	// or the single pair at key when endKey is nil, in key order.
	UnsafeRange(bucket, key, endKey []byte, limit int64) (keys, vals [][]byte)
	// UnsafeForEach calls visit for every pair of bucket in key order.
	UnsafeForEach(bucket []byte, visit func(k, v []byte) error) error
}

// UnsafeWriter writes inside the batch transaction the caller holds.
type UnsafeWriter interface {
	UnsafeReader
	UnsafePut(bucket, key, value []byte)
	// UnsafeSeqPut is UnsafePut for a key greater than every key of bucket
	// (the key bucket's revisions): bbolt then fills its pages to 90%
	// instead of splitting them in half, as etcd does, so the file holds the
	// same data in about half the pages. A key out of order is still stored
	// correctly; it only makes later inserts into that page split it sooner.
	UnsafeSeqPut(bucket, key, value []byte)
	UnsafeDelete(bucket, key []byte)
}

// ReadTx is a read transaction that sees every write the batch transaction
// has made and released (Unlock), committed to disk or not.
//
// Each UnsafeRange or UnsafeForEach call sees one consistent state that
// includes every write released before the call; a later call under the
// same RLock may also see writes released in between (Unlock does not wait
// for readers). Only Commit and Defrag wait for RUnlock.
type ReadTx interface {
	UnsafeReader
	RLock()
	RUnlock()
}

// BatchTx is the single write transaction. Writes are buffered and become
// durable only on Backend.Commit; readers see them as soon as Unlock returns.
// Keys and values passed to UnsafePut are kept by reference until the next
// commit: the caller must not modify them afterwards. A write to a bucket
// that does not exist yet creates it.
type BatchTx interface {
	UnsafeWriter
	Lock()
	Unlock()
}

// Snapshot is a consistent, point-in-time copy of the whole db.
type Snapshot interface {
	Size() int64
	WriteTo(w io.Writer) (n int64, err error)
	Close() error
}

// Backend is the bbolt database of one member.
type Backend interface {
	// ReadTx returns a read view; concurrent readers do not block each other
	// nor the writer.
	ReadTx() ReadTx
	// BatchTx returns the write transaction.
	BatchTx() BatchTx
	// PendingWrites is the number of writes since the last Commit.
	PendingWrites() int
	// Commit makes every released write durable (bbolt commit + fsync), first
	// calling the PreCommit hook under the batch lock. The backend never
	// commits on its own: the member decides when (see etcdserver), so the
	// consistent index it stores is always atomic with the data it applied.
	Commit()
	// StartCommit is Commit without the wait: it cuts the commit at once
	// (running PreCommit, so the caller decides what the commit holds) and
	// writes it in the background; the channel is closed once it is
	// durable. Writers and readers go on meanwhile. It waits only for a
	// commit still being written.
	StartCommit() <-chan struct{}
	// Snapshot commits and returns a consistent copy of the db.
	Snapshot() Snapshot
	// Hash returns the crc32 (Castagnoli) over every bucket name, key and
	// value, skipping the buckets/keys in ignores (etcd's Maintenance.Hash).
	Hash(ignores func(bucket, key []byte) bool) (uint32, error)
	// Size is the db file's size in bytes; SizeInUse the bytes holding data
	// (etcd's figure: the file less its free pages, those the last commit
	// freed included).
	Size() int64
	SizeInUse() int64
	// FreeBytes is what a defrag would give back as of the last commit,
	// including the pages that commit freed.
	FreeBytes() int64
	// Defrag rewrites the db into a compact new file online: readers and
	// writers go on while it copies and wait only for its final swap.
	Defrag() error
	// DropResidentPages takes the db file's pages out of the process's
	// resident set after a full scan (they stay in the page cache); the
	// member calls it once its start-up reads are done.
	DropResidentPages()
	// CommitID identifies the last commit (also after Close): equal IDs
	// mean the file has not been committed to since. Data derived from the
	// db (the key index checkpoint) records it to tell whether it is stale.
	CommitID() CommitID
	// Path is the db file's path.
	Path() string
	Close() error
}
