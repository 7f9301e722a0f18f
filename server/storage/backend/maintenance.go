package backend

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/metrics"
)

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
// before any later commit can slip in (it keeps the commit slot until the
// view is open).
func (b *backend) commitAndView() (*bolt.Tx, error) {
	b.commitSlot <- struct{}{}
	defer func() { <-b.commitSlot }()
	if !b.commitNow() {
		return nil, errClosed
	}
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
