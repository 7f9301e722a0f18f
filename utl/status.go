package utl

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strings"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/storage/backend"
)

// Status describes a db file as `etcdutl snapshot status` does. The JSON
// names are etcdutl's.
type Status struct {
	Hash      uint32 `json:"hash"`
	Revision  int64  `json:"revision"`
	TotalKey  int    `json:"totalKey"`
	TotalSize int64  `json:"totalSize"`
	// Version is the storage version recorded in the meta bucket, "" for a
	// db written before etcd v3.6.
	Version string `json:"version"`
}

// SnapshotStatus reads the db at path (a snapshot file, with or without its
// trailing sha256, or a member's db) without modifying it. Hash is the crc32
// (Castagnoli) of every bucket name followed by its keys and values, in
// bbolt order; Revision is the newest revision of the key bucket; TotalKey
// counts the keys whose newest revision is not a tombstone.
func SnapshotStatus(path string) (Status, error) {
	var st Status
	if _, err := os.Stat(path); err != nil {
		return st, err
	}
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		return st, err
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error { return scanStatus(tx, &st) })
	return st, err
}

func scanStatus(tx *bolt.Tx, st *Status) error {
	if err := checkIntegrity(tx); err != nil {
		return err
	}
	st.TotalSize = tx.Size()
	st.Version = storageVersion(tx)
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	live := make(map[string]struct{})
	c := tx.Cursor()
	for name, _ := c.First(); name != nil; name, _ = c.Next() {
		b := tx.Bucket(name)
		if b == nil {
			return fmt.Errorf("nil bucket: %q", string(name))
		}
		h.Write(name)
		isKey := bytes.Equal(name, backend.BucketKey)
		err := b.ForEach(func(k, v []byte) error {
			h.Write(k)
			h.Write(v)
			if !isKey {
				return nil
			}
			return countKey(k, v, st, live)
		})
		if err != nil {
			return fmt.Errorf("error during bucket key iteration, name: %q err: %w", string(name), err)
		}
	}
	st.TotalKey = len(live)
	st.Hash = h.Sum32()
	return nil
}

// countKey records one key-bucket entry: its revision becomes the latest
// seen and its user key is live unless the entry is a tombstone.
func countKey(k, v []byte, st *Status, live map[string]struct{}) error {
	main, err := parseRevKey(k)
	if err != nil {
		return fmt.Errorf("cannot parse revision key: %q err: %w", k, err)
	}
	st.Revision = main
	var kv mvccpb.KeyValue
	if err := proto.Unmarshal(v, &kv); err != nil {
		return fmt.Errorf("cannot unmarshal value, key: %q value: %q err: %w", k, v, err)
	}
	if isTombstone(k) {
		delete(live, string(kv.Key))
	} else {
		live[string(kv.Key)] = struct{}{}
	}
	return nil
}

func checkIntegrity(tx *bolt.Tx) error {
	var msgs []string
	for err := range tx.Check() {
		msgs = append(msgs, err.Error())
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("snapshot file integrity check failed. %d errors found.\n%s", len(msgs), strings.Join(msgs, "\n"))
}

// storageVersion returns the meta bucket's storage version in the
// major.minor.patch form etcdutl prints, or "" if it is missing or not a
// version.
func storageVersion(tx *bolt.Tx) string {
	meta := tx.Bucket(backend.BucketMeta)
	if meta == nil {
		return ""
	}
	v, ok := normalizeVersion(string(meta.Get(backend.MetaStorageVersion)))
	if !ok {
		return ""
	}
	return v
}

// revKeyLen is the length of a key-bucket key: 8-byte main revision, '_',
// 8-byte sub revision (plus a trailing 't' for tombstones).
const revKeyLen = 17

var errShortRevKey = errors.New("revision key too short")

// parseRevKey returns the main revision of a key-bucket key.
func parseRevKey(k []byte) (int64, error) {
	if len(k) < revKeyLen {
		return 0, errShortRevKey
	}
	return int64(beUint64(k[:8])), nil
}

func parseRev(k []byte) (main, sub int64, err error) {
	if len(k) < revKeyLen {
		return 0, 0, errShortRevKey
	}
	return int64(beUint64(k[:8])), int64(beUint64(k[9:17])), nil
}

func isTombstone(k []byte) bool { return len(k) == revKeyLen+1 && k[revKeyLen] == 't' }

func beUint64(b []byte) uint64 {
	var v uint64
	for _, c := range b[:8] {
		v = v<<8 | uint64(c)
	}
	return v
}
