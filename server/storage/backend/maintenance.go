package backend

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/failpoint"
	"github.com/cairnkv/cairn/server/metrics"
)

// defragBatchKeys is how many pairs Defrag copies per bbolt transaction,
// bounding the memory of each transaction on large databases.
const defragBatchKeys = 10000

// defragFillPercent packs the new file's pages: keys arrive in order, so
// pages need little room for later inserts.
const defragFillPercent = 0.9

var errClosed = errors.New("backend: closed")

// snapshot is a bbolt read tx kept open until Close; bbolt's copy-on-write
// pages make it a consistent view while writes go on.
type snapshot struct {
	tx    *bolt.Tx
	start time.Time
}

func (s *snapshot) Size() int64                        { return s.tx.Size() }
func (s *snapshot) WriteTo(w io.Writer) (int64, error) { return s.tx.WriteTo(w) }

// Close ends the view; the time it was open is the snapshot's duration
// (etcd_disk_backend_snapshot_duration_seconds), as the copy happens while
// it is.
func (s *snapshot) Close() error {
	metrics.BackendSnapshotSeconds.Observe(time.Since(s.start).Seconds())
	return rollbackView(s.tx)
}

// rollbackView ends a read tx opened by commitAndView.
func rollbackView(tx *bolt.Tx) error {
	err := tx.Rollback()
	if err == nil {
		metrics.OpenReadTxns.Dec()
	}
	return err
}

// Snapshot commits, then returns a view of exactly that commit. Until it is
// closed bbolt cannot remap the file and Defrag cannot finish.
func (b *backend) Snapshot() Snapshot {
	tx, err := b.commitAndView()
	if err != nil {
		b.lg.Fatal("failed to begin a snapshot tx", zap.Error(err))
	}
	return &snapshot{tx: tx, start: time.Now()}
}

// commitAndView commits the batch and opens a bbolt read tx on that commit
// before any later write can slip in.
func (b *backend) commitAndView() (*bolt.Tx, error) {
	b.batch.mu.Lock()
	defer b.batch.mu.Unlock()
	if b.closed {
		return nil, errClosed
	}
	b.commitLocked(true)
	tx, err := b.db.Begin(false)
	if err == nil {
		metrics.OpenReadTxns.Inc()
	}
	return tx, err
}

// Hash follows etcd's backend hash: for each bucket in bbolt order, the
// bucket name, then every key and value not ignored. Unlike etcd, a nil
// ignores hashes every pair (etcd would hash bucket names only).
func (b *backend) Hash(ignores func(bucket, key []byte) bool) (uint32, error) {
	tx, err := b.commitAndView()
	if err != nil {
		return 0, err
	}
	defer func() { _ = rollbackView(tx) }()
	start := time.Now()
	defer func() { metrics.HashSeconds.Observe(time.Since(start).Seconds()) }()
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	err = tx.ForEach(func(name []byte, bucket *bolt.Bucket) error {
		h.Write(name)
		return bucket.ForEach(func(k, v []byte) error {
			if ignores == nil || !ignores(name, k) {
				h.Write(k)
				h.Write(v)
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("backend: hash: %w", err)
	}
	return h.Sum32(), nil
}

// Defrag copies every bucket into a fresh file and swaps it in. Readers and
// writers wait until it is done. If copying fails the original file is kept
// and the backend goes on using it.
func (b *backend) Defrag() error {
	b.batch.mu.Lock()
	defer b.batch.mu.Unlock()
	if b.closed {
		return errClosed
	}
	start := time.Now()
	metrics.DefragInflight.Set(1)
	defer func() {
		metrics.DefragInflight.Set(0)
		metrics.BackendDefragSeconds.Observe(time.Since(start).Seconds())
	}()
	sizeBefore, inUseBefore := b.Size(), b.SizeInUse()
	b.lg.Info("defragmenting", zap.String("path", b.cfg.Path),
		zap.Int64("current-db-size-bytes", sizeBefore),
		zap.Int64("current-db-size-in-use-bytes", inUseBefore))

	// Readers are shut out from before the commit until the new file is
	// open: in between there is no read tx for them to use.
	b.preCommit()
	b.read.mu.Lock()
	defer b.read.mu.Unlock()
	b.commitTxs(false)

	if err := b.swapInDefragged(); err != nil {
		if berr := b.beginTxs(); berr != nil {
			b.lg.Fatal("failed to reopen the backend after a failed defrag", zap.Error(berr))
		}
		b.lg.Warn("failed to defragment", zap.String("path", b.cfg.Path), zap.Error(err))
		return err
	}
	if err := b.beginTxs(); err != nil {
		b.lg.Fatal("failed to begin transactions after defrag", zap.Error(err))
	}
	b.lg.Info("finished defragmenting", zap.String("path", b.cfg.Path),
		zap.Int64("current-db-size-bytes-diff", b.Size()-sizeBefore),
		zap.Int64("current-db-size-bytes", b.Size()),
		zap.Int64("current-db-size-in-use-bytes-diff", b.SizeInUse()-inUseBefore),
		zap.Int64("current-db-size-in-use-bytes", b.SizeInUse()),
		zap.Duration("took", time.Since(start)))
	return nil
}

// swapInDefragged writes the compact copy and renames it over the db file.
// On error b.db is still the open original. The caller holds both locks
// and no transaction is open.
func (b *backend) swapInDefragged() error {
	tmpPath := b.cfg.Path + ".tmp"
	failpoint.Inject("defragBeforeCopy")
	if err := b.writeDefragged(tmpPath); err != nil {
		_ = removeIfExists(tmpPath)
		return err
	}
	if err := b.db.Close(); err != nil {
		b.lg.Fatal("failed to close the db for defrag", zap.Error(err))
	}
	failpoint.Inject("defragBeforeRename")
	renameErr := os.Rename(tmpPath, b.cfg.Path)
	if renameErr == nil {
		renameErr = syncDir(filepath.Dir(b.cfg.Path))
	}
	db, err := bolt.Open(b.cfg.Path, 0o600, b.bopts)
	if err != nil {
		b.lg.Fatal("failed to reopen the db after defrag", zap.String("path", b.cfg.Path), zap.Error(err))
	}
	b.db = db
	if renameErr != nil {
		_ = removeIfExists(tmpPath)
		return fmt.Errorf("backend: defrag: %w", renameErr)
	}
	return nil
}

// writeDefragged copies b.db into a new bbolt file at path and syncs it.
func (b *backend) writeDefragged(path string) error {
	if err := removeIfExists(path); err != nil {
		return fmt.Errorf("backend: defrag: %w", err)
	}
	opts := *b.bopts
	opts.NoSync = true // one fsync at the end is enough for a file not yet in use
	// No large initial mmap for the copy: bbolt grows a file towards its
	// mapping, and a compacted db must come out small (etcd does the same).
	opts.InitialMmapSize = 0
	// The copy is read by nobody: locking it in RAM would only count
	// against the memlock limit twice.
	opts.Mlock = false
	tmp, err := bolt.Open(path, 0o600, &opts)
	if err != nil {
		return fmt.Errorf("backend: defrag: open %s: %w", path, err)
	}
	err = b.copyBuckets(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backend: defrag: %w", err)
	}
	return nil
}

// copyBuckets copies every bucket of b.db into dst, committing dst every
// defragBatchKeys pairs.
func (b *backend) copyBuckets(dst *bolt.DB) error {
	src, err := b.db.Begin(false)
	if err != nil {
		return err
	}
	defer func() { _ = src.Rollback() }()
	w := &defragWriter{db: dst, afterCommit: b.defragCopied}
	err = src.ForEach(func(name []byte, bucket *bolt.Bucket) error {
		if err := w.openBucket(name); err != nil {
			return err
		}
		return bucket.ForEach(w.put)
	})
	return w.finish(err)
}

// defragWriter writes into the new file in transactions of defragBatchKeys.
type defragWriter struct {
	db          *bolt.DB
	tx          *bolt.Tx
	name        []byte
	bucket      *bolt.Bucket
	count       int
	afterCommit func() error
}

func (w *defragWriter) openBucket(name []byte) error {
	if w.tx == nil {
		tx, err := w.db.Begin(true)
		if err != nil {
			return err
		}
		w.tx = tx
	}
	bucket, err := w.tx.CreateBucketIfNotExists(name)
	if err != nil {
		return err
	}
	bucket.FillPercent = defragFillPercent
	w.name, w.bucket = name, bucket
	return nil
}

func (w *defragWriter) put(k, v []byte) error {
	if w.count == defragBatchKeys {
		if err := w.commit(); err != nil {
			return err
		}
		if err := w.openBucket(w.name); err != nil {
			return err
		}
	}
	w.count++
	return w.bucket.Put(k, v)
}

func (w *defragWriter) commit() error {
	err := w.tx.Commit()
	w.tx, w.bucket, w.count = nil, nil, 0
	if err == nil && w.afterCommit != nil {
		err = w.afterCommit()
	}
	return err
}

// finish commits the last batch, or rolls it back if copying failed.
func (w *defragWriter) finish(copyErr error) error {
	if w.tx == nil {
		return copyErr
	}
	if copyErr != nil {
		_ = w.tx.Rollback()
		return copyErr
	}
	return w.commit()
}

// syncDir fsyncs a directory so that a rename in it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
