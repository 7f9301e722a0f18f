package backend

import (
	"encoding/binary"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// leafFill returns how full bucket's leaf pages are in the db at path.
func leafFill(t *testing.T, path string, bucket []byte) float64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var st bolt.BucketStats
	_ = db.View(func(tx *bolt.Tx) error {
		st = tx.Bucket(bucket).Stats()
		return nil
	})
	return float64(st.LeafInuse) / float64(st.LeafAlloc)
}

// TestSeqPutPacksPages writes increasing keys over several commits, once
// with UnsafeSeqPut and once with UnsafePut: the sequential path must pack
// the leaf pages full (etcd's 90% fails it), the plain one about half.
func TestSeqPutPacksPages(t *testing.T) {
	for _, tc := range []struct {
		name             string
		seq              bool
		minFill, maxFill float64
	}{
		{name: "sequential", seq: true, minFill: 0.95, maxFill: 1},
		{name: "plain", seq: false, minFill: 0.3, maxFill: 0.65},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, path := NewTmpBackend(t)
			value := make([]byte, 100)
			for commit := 0; commit < 20; commit++ {
				tx := b.BatchTx()
				tx.Lock()
				for i := 0; i < 500; i++ {
					key := binary.BigEndian.AppendUint64(nil, uint64(commit*500+i))
					if tc.seq {
						tx.UnsafeSeqPut(BucketKey, key, value)
					} else {
						tx.UnsafePut(BucketKey, key, value)
					}
				}
				tx.Unlock()
				b.Commit()
			}
			if got := len(readRange(b.ReadTx(), BucketKey, "\x00", "\xff", 0)); got != 10000 {
				t.Fatalf("read back %d keys, want 10000", got)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			if fill := leafFill(t, path, BucketKey); fill < tc.minFill || fill > tc.maxFill {
				t.Errorf("leaf pages %.2f full, want %.2f..%.2f", fill, tc.minFill, tc.maxFill)
			}
		})
	}
}

// TestDefragPacksTheKeyBucketFull writes the key bucket and a small bucket
// in random order (plain puts leave their pages about half full), then
// defragments: the key bucket, which only ever grows at its end, must come
// out packed full, the other with room for inserts (etcd's 90%).
func TestDefragPacksTheKeyBucketFull(t *testing.T) {
	b, path := NewTmpBackend(t)
	small := []byte("small")
	value := make([]byte, 100)
	tx := b.BatchTx()
	tx.Lock()
	for i := 0; i < 10000; i++ {
		key := binary.BigEndian.AppendUint64(nil, uint64(i*7919%10000))
		tx.UnsafePut(BucketKey, key, value)
		tx.UnsafePut(small, key, value)
	}
	tx.Unlock()
	b.Commit()
	if err := b.Defrag(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bucket           []byte
		minFill, maxFill float64
	}{
		{BucketKey, 0.95, 1},
		{small, 0.8, 0.93},
	} {
		if fill := leafFill(t, path, tc.bucket); fill < tc.minFill || fill > tc.maxFill {
			t.Errorf("bucket %s: leaf pages %.2f full after defrag, want %.2f..%.2f", tc.bucket, fill, tc.minFill, tc.maxFill)
		}
	}
}
