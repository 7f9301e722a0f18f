package utl

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cairnkv/cairn/pkg/fileutil"

	bolt "go.etcd.io/bbolt"

	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// BackendPath is where a data dir keeps its db.
func BackendPath(dataDir string) string { return filepath.Join(dataDir, "member", "snap", "db") }

// waitUnlocked waits up to timeout (0: forever) for the bbolt file lock on
// path, as etcdutl's --timeout does, so that a db in use by a running member
// fails instead of blocking.
func waitUnlocked(path string, timeout time.Duration) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		return fmt.Errorf("failed to open database %s: %w", path, err)
	}
	return db.Close()
}

func openBackend(path string, timeout time.Duration) (backend.Backend, error) {
	if err := waitUnlocked(path, timeout); err != nil {
		return nil, err
	}
	return backend.Open(backend.Config{Path: path})
}

// Defrag compacts the db of a data dir no member is using: every bucket is
// copied in order into a new file, which then replaces the db. Like etcd's
// defrag, the new file is opened without the server's large initial mmap,
// so bbolt sizes it to its contents instead of adding a 16 MiB allocation.
func Defrag(dataDir string, timeout time.Duration) error {
	path := BackendPath(dataDir)
	if _, err := os.Stat(path); err != nil {
		return err
	}
	src, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		return fmt.Errorf("failed to open database %s: %w", path, err)
	}
	tmpPath := path + ".tmp"
	err = writeCompact(src, tmpPath)
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmpPath)
		return err
	}
	if err := os.Rename(tmpPath, path); err != nil {
		return err
	}
	return fileutil.FsyncDir(filepath.Dir(path))
}

// defragBatch is how many pairs go in one transaction of the copy.
const defragBatch = 10000

func writeCompact(src *bolt.DB, path string) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	dst, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return err
	}
	err = src.View(func(tx *bolt.Tx) error { return copyBuckets(tx, dst) })
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}

// copyBuckets copies every bucket of tx into dst, densely packed.
func copyBuckets(tx *bolt.Tx, dst *bolt.DB) error {
	out, err := dst.Begin(true)
	if err != nil {
		return err
	}
	n := 0
	err = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		if _, err := out.CreateBucketIfNotExists(name); err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			if n++; n%defragBatch == 0 {
				if out, err = recommit(out, dst); err != nil {
					return err
				}
			}
			ob := out.Bucket(name)
			ob.FillPercent = 0.9
			return ob.Put(k, v)
		})
	})
	if err != nil {
		if out != nil {
			out.Rollback()
		}
		return err
	}
	return out.Commit()
}

func recommit(tx *bolt.Tx, db *bolt.DB) (*bolt.Tx, error) {
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return db.Begin(true)
}

// HashKVFile hashes the key space of the db file at path up to rev (0: the
// latest revision) as Maintenance.HashKV does.
func HashKVFile(path string, rev int64, timeout time.Duration) (HashKV, error) {
	if _, err := os.Stat(path); err != nil {
		return HashKV{}, err
	}
	b, err := openBackend(path, timeout)
	if err != nil {
		return HashKV{}, err
	}
	defer b.Close()
	st := mvcc.New(nil, b, mvcc.StoreConfig{})
	defer st.Close()
	h, _, err := st.HashByRev(rev)
	if err != nil {
		return HashKV{}, err
	}
	return HashKV{Hash: h.Hash, HashRevision: h.Revision, CompactRevision: h.CompactRevision}, nil
}
