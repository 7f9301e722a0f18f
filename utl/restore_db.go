package utl

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cairnkv/cairn/pkg/fileutil"
	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// hasChecksum reports whether a file of n bytes ends with the sha256 that
// Maintenance.Snapshot appends: bbolt files are multiples of 512 bytes.
func hasChecksum(n int64) bool { return n%512 == sha256.Size }

// copyAndVerifyDB copies src to snapDir/db, strips the trailing sha256 and,
// unless skip, checks it. Like etcdutl it leaves the copy behind on failure.
func copyAndVerifyDB(src, snapDir string, skip bool) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	want, err := trailingSum(f)
	if err != nil {
		return err
	}
	if err := fileutil.CreateDirAll(snapDir); err != nil {
		return err
	}
	db, err := os.OpenFile(filepath.Join(snapDir, "db"), os.O_RDWR|os.O_CREATE, fileutil.PrivateFileMode)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := io.Copy(db, f); err != nil {
		return err
	}
	if err := stripAndCheck(db, want, skip); err != nil {
		return err
	}
	return fileutil.Fsync(db)
}

// trailingSum reads the last sha256.Size bytes of f and rewinds it.
func trailingSum(f *os.File) ([]byte, error) {
	if _, err := f.Seek(-sha256.Size, io.SeekEnd); err != nil {
		return nil, err
	}
	sum := make([]byte, sha256.Size)
	if _, err := io.ReadFull(f, sum); err != nil {
		return nil, err
	}
	_, err := f.Seek(0, io.SeekStart)
	return sum, err
}

func stripAndCheck(db *os.File, want []byte, skip bool) error {
	size, err := db.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	hasHash := hasChecksum(size)
	if hasHash {
		if err := db.Truncate(size - sha256.Size); err != nil {
			return err
		}
	}
	if !hasHash && !skip {
		return fmt.Errorf("snapshot missing hash but --skip-hash-check=false")
	}
	if !hasHash || skip {
		return nil
	}
	if _, err := db.Seek(0, io.SeekStart); err != nil {
		return err
	}
	h := sha256.New()
	if _, err := io.Copy(h, db); err != nil {
		return err
	}
	if got := h.Sum(nil); !bytes.Equal(want, got) {
		return fmt.Errorf("expected sha256 %v, got %v", want, got)
	}
	return nil
}

// rewriteDB makes the copied db part of the new cluster: the membership is
// replaced, the revision optionally bumped and marked compacted, and the
// consistent index and term set to the last bootstrap entry, so the member
// applies nothing twice when it starts.
func rewriteDB(p *restorePlan) error {
	b, err := backend.Open(backend.Config{Path: p.dbPath(), MmapSize: int64(p.cfg.InitialMmapSize)})
	if err != nil {
		return err
	}
	tx := b.BatchTx()
	tx.Lock()
	err = rewriteTx(tx, p)
	tx.Unlock()
	if err == nil {
		b.Commit()
	}
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	return err
}

func rewriteTx(tx backend.BatchTx, p *restorePlan) error {
	if err := clearBucket(tx, backend.BucketMembers); err != nil {
		return err
	}
	if err := clearBucket(tx, backend.BucketMembersRemoved); err != nil {
		return err
	}
	if p.cfg.MarkCompacted && p.cfg.RevisionBump > 0 {
		if err := bumpRevision(tx, int64(p.cfg.RevisionBump)); err != nil {
			return err
		}
	}
	for _, m := range p.cl.members {
		if err := membership.Save(tx, m); err != nil {
			return err
		}
	}
	backend.PutUint64(tx, backend.BucketMeta, backend.MetaConsistentIndex, uint64(len(p.cl.members)))
	backend.PutUint64(tx, backend.BucketMeta, backend.MetaTerm, bootstrapTerm)
	return nil
}

func clearBucket(tx backend.BatchTx, bucket []byte) error {
	var keys [][]byte
	err := tx.UnsafeForEach(bucket, func(k, _ []byte) error {
		keys = append(keys, bytes.Clone(k))
		return nil
	})
	for _, k := range keys {
		tx.UnsafeDelete(bucket, k)
	}
	return err
}

// bumpRevision writes an empty key-bucket entry at latest+amount (sub 0)
// and schedules a compaction there, as etcdutl does, so that clients never
// see the revision go backwards and watchers from before the restore fail
// with "compacted" instead of missing events.
func bumpRevision(tx backend.BatchTx, amount int64) error {
	latest, err := latestRevision(tx)
	if err != nil {
		return err
	}
	latest = mvcc.Revision{Main: latest.Main + amount}
	tx.UnsafePut(backend.BucketKey, mvcc.RevToBytes(latest), []byte{})
	tx.UnsafePut(backend.BucketMeta, backend.MetaScheduledCompactRev, mvcc.RevToBytes(mvcc.Revision{Main: latest.Main}))
	return nil
}

func latestRevision(tx backend.UnsafeReader) (mvcc.Revision, error) {
	var latest mvcc.Revision
	err := tx.UnsafeForEach(backend.BucketKey, func(k, _ []byte) error {
		main, sub, err := parseRev(k)
		if err != nil {
			return fmt.Errorf("cannot parse revision key: %q err: %w", k, err)
		}
		if r := (mvcc.Revision{Main: main, Sub: sub}); r.GreaterThan(latest) {
			latest = r
		}
		return nil
	})
	return latest, err
}
