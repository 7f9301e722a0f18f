package backend

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// dump returns every bucket's pairs as "bucket/k=v", through the read view.
func dump(t *testing.T, b Backend) []string {
	t.Helper()
	rt := b.ReadTx()
	rt.RLock()
	defer rt.RUnlock()
	var out []string
	for _, bucket := range AllBuckets {
		for _, kv := range forEachPairs(rt, bucket) {
			out = append(out, string(bucket)+"/"+kv)
		}
	}
	return out
}

// dumpFile returns the same listing read straight from a bbolt file.
func dumpFile(t *testing.T, path string) []string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	err = db.View(func(tx *bolt.Tx) error {
		for _, bucket := range AllBuckets {
			bk := tx.Bucket(bucket)
			if bk == nil {
				return fmt.Errorf("bucket %s missing", bucket)
			}
			_ = bk.ForEach(func(k, v []byte) error {
				out = append(out, string(bucket)+"/"+string(k)+"="+string(v))
				return nil
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func fillKeys(b Backend, n, valueSize int) {
	value := bytes.Repeat([]byte("v"), valueSize)
	tx := b.BatchTx()
	tx.Lock()
	for i := 0; i < n; i++ {
		tx.UnsafePut(BucketKey, []byte(fmt.Sprintf("key%06d", i)), value)
	}
	tx.Unlock()
	b.Commit()
}

func TestSnapshotIsAConsistentValidDB(t *testing.T) {
	b, _ := NewTmpBackend(t)
	put(b, BucketKey, "a", "1", "b", "2")
	put(b, BucketLease, "l", "x")
	want := dump(t, b)

	snap := b.Snapshot()
	put(b, BucketKey, "after", "snapshot") // must not be in the snapshot
	b.Commit()

	path := filepath.Join(t.TempDir(), "snap.db")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := snap.WriteTo(f)
	if err != nil {
		t.Fatal(err)
	}
	if n != snap.Size() {
		t.Errorf("WriteTo wrote %d bytes, Size says %d", n, snap.Size())
	}
	if err := errors.Join(f.Close(), snap.Close()); err != nil {
		t.Fatal(err)
	}
	if got := dumpFile(t, path); !slices.Equal(got, want) {
		t.Fatalf("snapshot holds %v, want %v", got, want)
	}
}

func TestHashEqualForEqualContents(t *testing.T) {
	b1, _ := NewTmpBackend(t)
	b2, _ := NewTmpBackend(t)
	// Same final contents, reached by different writes and commits.
	put(b1, BucketKey, "a", "1", "b", "2")
	put(b2, BucketKey, "b", "0")
	b2.Commit()
	put(b2, BucketKey, "a", "1", "c", "3")
	del(b2, BucketKey, "c")
	put(b2, BucketKey, "b", "2")

	h1, err1 := b1.Hash(nil)
	h2, err2 := b2.Hash(nil)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if h1 != h2 {
		t.Fatalf("equal contents hash to %x and %x", h1, h2)
	}
	if b1.PendingWrites() != 0 {
		t.Errorf("Hash left %d pending writes; it must commit first", b1.PendingWrites())
	}
	put(b2, BucketKey, "b", "3")
	if h3, _ := b2.Hash(nil); h3 == h1 {
		t.Fatal("hash did not change with a value")
	}
}

func TestHashIgnores(t *testing.T) {
	b1, _ := NewTmpBackend(t)
	b2, _ := NewTmpBackend(t)
	put(b1, BucketKey, "k", "v")
	put(b2, BucketKey, "k", "v")
	put(b1, BucketMeta, string(MetaConsistentIndex), "11111111")
	put(b2, BucketMeta, string(MetaConsistentIndex), "22222222")
	ignoreIndex := func(bucket, key []byte) bool {
		return bytes.Equal(bucket, BucketMeta) && bytes.Equal(key, MetaConsistentIndex)
	}
	h1, _ := b1.Hash(ignoreIndex)
	h2, _ := b2.Hash(ignoreIndex)
	if h1 != h2 {
		t.Fatalf("hashes differ (%x, %x) though the only difference is ignored", h1, h2)
	}
	if all1, _ := b1.Hash(nil); all1 == h1 {
		t.Fatal("ignoring a key did not change the hash")
	}
}

func TestDefragShrinksAndKeepsData(t *testing.T) {
	b, path := NewTmpBackend(t)
	fillKeys(b, 25000, 200) // more than one defrag copy batch
	del(b, BucketKey, func() []string {
		var keys []string
		for i := 0; i < 25000; i++ {
			if i%50 != 0 {
				keys = append(keys, fmt.Sprintf("key%06d", i))
			}
		}
		return keys
	}()...)
	b.Commit()
	put(b, BucketLease, "released", "uncommitted") // Defrag must keep it
	want := dump(t, b)
	hashBefore, _ := b.Hash(nil)
	sizeBefore, inUseBefore := b.Size(), b.SizeInUse()
	if inUseBefore <= 0 || inUseBefore >= sizeBefore {
		t.Fatalf("before defrag size %d, in use %d: want 0 < in use < size after deletes", sizeBefore, inUseBefore)
	}

	if err := b.Defrag(); err != nil {
		t.Fatal(err)
	}
	if b.Size() >= sizeBefore/4 {
		t.Errorf("size %d after defrag, was %d: want much smaller", b.Size(), sizeBefore)
	}
	if b.SizeInUse() > b.Size() {
		t.Errorf("in use %d > size %d", b.SizeInUse(), b.Size())
	}
	if got := dump(t, b); !slices.Equal(got, want) {
		t.Fatalf("defrag changed the data: %d pairs, want %d", len(got), len(want))
	}
	if h, _ := b.Hash(nil); h != hashBefore {
		t.Fatalf("hash %x after defrag, %x before", h, hashBefore)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
	put(b, BucketKey, "new", "write") // the backend keeps working
	b.Commit()
	if got := viaReadTx(b, BucketKey, "new", "", 0); !slices.Equal(got, []string{"new=write"}) {
		t.Fatalf("write after defrag: %v", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dumpFile(t, path); len(got) != len(want)+1 {
		t.Fatalf("file after defrag holds %d pairs, want %d", len(got), len(want)+1)
	}
}

func TestFailedDefragKeepsOriginal(t *testing.T) {
	b, path := NewTmpBackend(t)
	fillKeys(b, 25000, 10)
	put(b, BucketKey, "released", "x")
	want := dump(t, b)
	errInjected := errors.New("injected")
	b.(*backend).defragCopied = func() error { return errInjected }

	if err := b.Defrag(); !errors.Is(err, errInjected) {
		t.Fatalf("Defrag error = %v, want the injected one", err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
	if got := dump(t, b); !slices.Equal(got, want) {
		t.Fatal("failed defrag changed the data")
	}
	put(b, BucketKey, "after", "y")
	b.Commit()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dumpFile(t, path); len(got) != len(want)+1 {
		t.Fatalf("file holds %d pairs, want %d", len(got), len(want)+1)
	}
}

func TestSizes(t *testing.T) {
	b, path := NewTmpBackend(t)
	empty := b.Size()
	if empty <= 0 || b.SizeInUse() <= 0 || b.SizeInUse() > empty {
		t.Fatalf("empty db: size %d, in use %d", empty, b.SizeInUse())
	}
	fillKeys(b, 5000, 100)
	if b.Size() <= empty {
		t.Fatalf("size %d did not grow from %d", b.Size(), empty)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if b.Size() > st.Size() {
		t.Fatalf("Size %d exceeds the file's %d bytes", b.Size(), st.Size())
	}
	if b.SizeInUse() > b.Size() {
		t.Fatalf("in use %d > size %d", b.SizeInUse(), b.Size())
	}
}

func TestClosedBackendRefusesMaintenance(t *testing.T) {
	b, _ := NewTmpBackend(t)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Defrag(); err == nil {
		t.Error("Defrag on a closed backend succeeded")
	}
	if _, err := b.Hash(nil); err == nil {
		t.Error("Hash on a closed backend succeeded")
	}
	b.Commit() // must not panic
}

// TestMaintenanceUnderLoad is meant for -race: defrag, hash and snapshots run
// while readers and a writer keep going.
func TestMaintenanceUnderLoad(t *testing.T) {
	b, _ := NewTmpBackend(t)
	fillKeys(b, 1000, 10)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			put(b, BucketKey, fmt.Sprintf("w%06d", i), "x")
			if i%50 == 0 {
				b.Commit()
			}
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if got := viaReadTx(b, BucketKey, "key", "kez", 0); len(got) != 1000 {
				t.Errorf("reader saw %d of 1000 keys", len(got))
				return
			}
		}
	}()
	for i := 0; i < 5; i++ {
		if err := b.Defrag(); err != nil {
			t.Error(err)
		}
		if _, err := b.Hash(nil); err != nil {
			t.Error(err)
		}
		snap := b.Snapshot()
		if _, err := snap.WriteTo(io.Discard); err != nil {
			t.Error(err)
		}
		_ = snap.Close()
	}
	close(stop)
	wg.Wait()
}

// TestFreeBytesCountsWhatTheLastCommitFreed: bbolt reports the pages a
// commit freed as pending until the next write tx begins; FreeBytes and
// SizeInUse both count them as free (etcd, which begins its next write tx
// right after a commit, mostly does too).
func TestFreeBytesCountsWhatTheLastCommitFreed(t *testing.T) {
	b, _ := NewTmpBackend(t)
	fillKeys(b, 200, 64<<10) // 200 overflow values of 64 KiB
	var keys []string
	for i := range 200 {
		keys = append(keys, fmt.Sprintf("key%06d", i))
	}
	del(b, BucketKey, keys...)
	b.Commit()
	if free := b.FreeBytes(); free < 200*64<<10 {
		t.Fatalf("FreeBytes %d after deleting 12.8 MB, want at least that", free)
	}
	if free, notInUse := b.FreeBytes(), b.Size()-b.SizeInUse(); free != notInUse {
		t.Errorf("FreeBytes %d, Size-SizeInUse %d: want them equal", free, notInUse)
	}
	if b.FreeBytes() > b.Size() {
		t.Errorf("FreeBytes %d > Size %d", b.FreeBytes(), b.Size())
	}
}
