// Package backend owns the member's bbolt database: the single batched write
// transaction, the shared read view that sees released writes before they are
// committed, commits (with the PreCommit hook that stores the consistent
// index atomically with the data), snapshots, hashing, sizes and online
// defragmentation. It knows buckets and bytes only; what the keys and values
// mean (revisions, leases, members, auth) belongs to the layers above.
//
// The backend never commits on its own. The member calls Commit (or
// StartCommit) when it has applied a batch of entries, so what is on disk
// always matches the consistent index written by PreCommit. Writes stay in
// memory until a commit writes them into bbolt in the background
// (commit.go), so writers never wait for bbolt's write and fsync.
//
// Lock order, outermost first: the commit slot, the batch lock, the read
// view's lock. Commit, Snapshot, Hash and Defrag take the slot and the
// batch lock, so a caller that holds BatchTx's lock must not call them.
package backend

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
)

// DefaultMmapSize is the initial mmap size, etcd's 10 GiB. bbolt must remap
// to grow beyond it, and a remap waits for every open read transaction.
const DefaultMmapSize int64 = 10 * 1024 * 1024 * 1024

// Config configures Open.
type Config struct {
	// Path of the bbolt file; created (mode 0600) if missing.
	Path string
	// PreCommit, if set, runs under the batch lock just before each bbolt
	// commit; the member writes its consistent index here.
	PreCommit func(tx UnsafeWriter)
	// MmapSize is bbolt's initial mmap size; 0 means DefaultMmapSize.
	MmapSize int64
	// Logger defaults to a no-op logger.
	Logger *zap.Logger
	// UnsafeNoFsync skips fsync on commit: a crash may lose or corrupt data.
	UnsafeNoFsync bool
	// Mlock (--memory-mlock) locks the mapped db file in RAM so that it is
	// never paged out; opening fails if the memlock limit is too low.
	Mlock bool
	// AwaitDiskGap, if set, is called before each bulk sync of a
	// defragmentation (a copy batch, a catch-up round, a release step of
	// the old file) and returns when such a sync disturbs the member's WAL
	// least: right after one of its fdatasyncs (see pkg/syncgap).
	AwaitDiskGap func()
}

type backend struct {
	cfg   Config
	lg    *zap.Logger
	bopts *bolt.Options

	// db is replaced by Defrag, holding commitSlot and both locks; it is
	// read under commitSlot or the batch lock.
	db *bolt.DB
	// commitSlot (capacity 1) is held by the one commit in flight, from its
	// cut until it is shown, and by Defrag's start and swap (commit.go).
	commitSlot chan struct{}
	batch      *batchTx
	read       *readTx

	size      atomic.Int64
	sizeInUse atomic.Int64
	freeBytes atomic.Int64
	committed atomic.Pointer[CommitID] // the last commit's, see CommitID
	closed    bool                     // under batch.mu

	// defragMu runs defrags one at a time; stopping tells a running one
	// that Close has begun; retired counts db files replaced by a defrag
	// and not closed yet (see defrag.go).
	defragMu sync.Mutex
	stopping atomic.Bool
	retired  sync.WaitGroup

	// defragCopied, if set, is called after each copied batch of Defrag;
	// an error aborts the defrag. defragCaughtUp, if set, is called when
	// the catch-up ends, before the swap. Tests use them to write while a
	// defrag runs and to inject failures.
	defragCopied   func() error
	defragCaughtUp func()
	// commitWriting, if set, is called in a commit's write step just
	// before bbolt commits; tests use it to hold a commit in flight.
	commitWriting func()
}

// Open opens or creates the bbolt file at cfg.Path and makes sure every
// bucket of AllBuckets exists. It writes nothing else.
func Open(cfg Config) (Backend, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.MmapSize <= 0 {
		cfg.MmapSize = DefaultMmapSize
	}
	b := &backend{cfg: cfg, lg: cfg.Logger, bopts: boltOptions(cfg), read: newReadTx(), commitSlot: make(chan struct{}, 1)}
	b.batch = &batchTx{lg: cfg.Logger, read: b.read}
	db, err := openBolt(cfg.Path, b.bopts)
	if err != nil {
		return nil, fmt.Errorf("backend: open %s: %w", cfg.Path, err)
	}
	if err := createBuckets(db); err != nil {
		_ = db.Close()
		return nil, err
	}
	b.db = db
	if err := b.beginTxs(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return b, nil
}

// fileGrowStep is how far past its data bbolt grows the file when a
// commit needs more room (bbolt's AllocSize; its default, which etcd
// keeps, is 16 MiB). The file's apparent size overshoots the data by up to
// one step, so a smaller step keeps the file within 4 MiB of dbSize; the
// price is a truncate and fsync every 4 MiB of growth instead of 16, a
// few per second at full write speed, in the background commit.
const fileGrowStep = 4 << 20

// openBolt opens the bbolt file at path as every backend file is opened.
func openBolt(path string, opts *bolt.Options) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		return nil, err
	}
	db.AllocSize = fileGrowStep
	return db, nil
}

func boltOptions(cfg Config) *bolt.Options {
	return &bolt.Options{
		InitialMmapSize: int(cfg.MmapSize),
		// Like etcd: the freelist is rebuilt on open instead of written on
		// every commit, and the hashmap freelist scales to large files.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		NoSync:         cfg.UnsafeNoFsync,
		NoGrowSync:     cfg.UnsafeNoFsync,
		Mlock:          cfg.Mlock,
	}
}

// createBuckets creates the missing buckets of AllBuckets. A db that has
// them all is not written to, not even a new bbolt meta page.
func createBuckets(db *bolt.DB) error {
	missing := false
	_ = db.View(func(tx *bolt.Tx) error {
		for _, name := range AllBuckets {
			missing = missing || tx.Bucket(name) == nil
		}
		return nil
	})
	if !missing {
		return nil
	}
	return db.Update(func(tx *bolt.Tx) error {
		for _, name := range AllBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("backend: create bucket %s: %w", name, err)
			}
		}
		return nil
	})
}

// beginTxs opens the read view on b.db's last commit and refreshes the
// sizes. The caller is the only user of b.
func (b *backend) beginTxs() error {
	rtx, err := b.db.Begin(false)
	if err != nil {
		return fmt.Errorf("backend: begin read tx: %w", err)
	}
	b.read.reopen(rtx)
	b.refreshCommitted(rtx)
	return nil
}

// refreshCommitted records, as of the read tx on the newest commit, the
// commit's identity, the size of the file, and how much of it is not on
// the freelist (etcd's "in use").
func (b *backend) refreshCommitted(tx *bolt.Tx) {
	b.committed.Store(commitIDOf(tx))
	size := tx.Size()
	st := b.db.Stats()
	pageSize := int64(b.db.Info().PageSize)
	// Pages the last commits freed are still "pending" in bbolt's figures
	// until the next write tx begins (the readers' base of the commit
	// before held them while this one was written); etcd, which begins its
	// next write tx at once, counts them as free, and so does cairn.
	free := int64(st.FreePageN+st.PendingPageN) * pageSize
	b.size.Store(size)
	b.sizeInUse.Store(size - free)
	b.freeBytes.Store(free)
}

func (b *backend) ReadTx() ReadTx     { return b.read }
func (b *backend) BatchTx() BatchTx   { return b.batch }
func (b *backend) PendingWrites() int { return int(b.batch.pending.Load()) }
func (b *backend) Size() int64        { return b.size.Load() }
func (b *backend) SizeInUse() int64   { return b.sizeInUse.Load() }
func (b *backend) FreeBytes() int64   { return b.freeBytes.Load() }
func (b *backend) Path() string       { return b.cfg.Path }

// CommitID identifies one committed state of a db file: bbolt numbers every
// commit (by any program that opens the file), and a commit that changes
// the key bucket gives its root a new page.
type CommitID struct {
	TxID    uint64
	Size    int64  // bytes up to bbolt's high-water page
	KeyRoot uint64 // page of the key bucket's root; 0 while the bucket is small enough to be inline
}

func commitIDOf(tx *bolt.Tx) *CommitID {
	id := &CommitID{TxID: uint64(tx.ID()), Size: tx.Size()}
	if kb := tx.Bucket(BucketKey); kb != nil {
		id.KeyRoot = uint64(kb.Root())
	}
	return id
}

// CommitID is the identity of the last commit, also after Close.
func (b *backend) CommitID() CommitID { return *b.committed.Load() }

// Close commits the pending writes and closes the db. Closing twice is a
// no-op.
func (b *backend) Close() error {
	b.stopping.Store(true)
	b.commitSlot <- struct{}{}
	defer func() { <-b.commitSlot }()
	// Nobody should write once Close has begun; if somebody still did,
	// commit again rather than lose it.
	for {
		if !b.commitNow() {
			return nil // closed already
		}
		b.batch.mu.Lock()
		if b.batch.pending.Load() == 0 {
			break
		}
		b.batch.mu.Unlock()
	}
	defer b.batch.mu.Unlock()
	b.closed = true
	b.read.mu.Lock()
	b.read.close()
	b.read.mu.Unlock()
	err := b.db.Close()
	b.retired.Wait()
	return err
}

// PutUint64 stores v at key of bucket as 8 bytes big endian, the encoding of
// the meta bucket's consistent index and term.
func PutUint64(tx UnsafeWriter, bucket, key []byte, v uint64) {
	buf := make([]byte, 8)
	binary.BigEndian.PutUint64(buf, v)
	tx.UnsafePut(bucket, key, buf)
}

// ReadUint64 reads a value written by PutUint64; ok is false when the key is
// missing or does not hold 8 bytes.
func ReadUint64(tx UnsafeReader, bucket, key []byte) (v uint64, ok bool) {
	_, vals := tx.UnsafeRange(bucket, key, nil, 0)
	if len(vals) != 1 || len(vals[0]) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(vals[0]), true
}

// removeIfExists removes path, ignoring that it does not exist.
func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
