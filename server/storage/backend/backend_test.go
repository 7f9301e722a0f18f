package backend

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var testBucket = BucketKey

func put(b Backend, bucket []byte, kvs ...string) {
	tx := b.BatchTx()
	tx.Lock()
	defer tx.Unlock()
	for i := 0; i+1 < len(kvs); i += 2 {
		tx.UnsafePut(bucket, []byte(kvs[i]), []byte(kvs[i+1]))
	}
}

func del(b Backend, bucket []byte, keys ...string) {
	tx := b.BatchTx()
	tx.Lock()
	defer tx.Unlock()
	for _, k := range keys {
		tx.UnsafeDelete(bucket, []byte(k))
	}
}

// readRange returns "k=v" pairs seen through r.
func readRange(r UnsafeReader, bucket []byte, key, end string, limit int64) []string {
	var endKey []byte
	if end != "" {
		endKey = []byte(end)
	}
	keys, vals := r.UnsafeRange(bucket, []byte(key), endKey, limit)
	out := []string{}
	for i := range keys {
		out = append(out, string(keys[i])+"="+string(vals[i]))
	}
	return out
}

func viaReadTx(b Backend, bucket []byte, key, end string, limit int64) []string {
	rt := b.ReadTx()
	rt.RLock()
	defer rt.RUnlock()
	return readRange(rt, bucket, key, end, limit)
}

func viaBatchTx(b Backend, bucket []byte, key, end string, limit int64) []string {
	tx := b.BatchTx()
	tx.Lock()
	defer tx.Unlock()
	return readRange(tx, bucket, key, end, limit)
}

func forEachPairs(r UnsafeReader, bucket []byte) []string {
	out := []string{}
	_ = r.UnsafeForEach(bucket, func(k, v []byte) error {
		out = append(out, string(k)+"="+string(v))
		return nil
	})
	return out
}

func TestOpenCreatesAllBuckets(t *testing.T) {
	b, _ := NewTmpBackend(t)
	var names []string
	be := b.(*backend)
	be.read.RLock()
	for name := range be.read.buckets {
		names = append(names, name)
	}
	be.read.RUnlock()
	sort.Strings(names)
	var want []string
	for _, n := range AllBuckets {
		want = append(want, string(n))
	}
	sort.Strings(want)
	if !slices.Equal(names, want) {
		t.Fatalf("buckets = %v, want %v", names, want)
	}
	if b.PendingWrites() != 0 {
		t.Fatalf("PendingWrites = %d after Open", b.PendingWrites())
	}
}

func TestReadTxSeesReleasedWritesBeforeCommit(t *testing.T) {
	b, _ := NewTmpBackend(t)
	tx := b.BatchTx()
	tx.Lock()
	tx.UnsafePut(testBucket, []byte("k"), []byte("v"))
	if got := viaReadTxUnlocked(b, "k"); len(got) != 0 {
		t.Fatalf("read saw an unreleased write: %v", got)
	}
	tx.Unlock()
	if got := viaReadTx(b, testBucket, "k", "", 0); !slices.Equal(got, []string{"k=v"}) {
		t.Fatalf("after Unlock got %v", got)
	}
	if b.PendingWrites() != 1 {
		t.Fatalf("PendingWrites = %d, want 1", b.PendingWrites())
	}
	b.Commit()
	if b.PendingWrites() != 0 {
		t.Fatalf("PendingWrites = %d after Commit", b.PendingWrites())
	}
	if got := viaReadTx(b, testBucket, "k", "", 0); !slices.Equal(got, []string{"k=v"}) {
		t.Fatalf("after Commit got %v", got)
	}
}

// viaReadTxUnlocked reads while the caller holds the batch lock; the read
// lock is independent of it.
func viaReadTxUnlocked(b Backend, key string) []string {
	return viaReadTx(b, testBucket, key, "", 0)
}

// TestRangeMergesBufferAndCommitted checks ordering, limits, overwrites and
// deletes across committed data and released-but-uncommitted writes.
func TestRangeMergesBufferAndCommitted(t *testing.T) {
	b, _ := NewTmpBackend(t)
	put(b, testBucket, "a", "1", "c", "1", "e", "1", "g", "1")
	b.Commit()
	put(b, testBucket, "b", "2", "e", "2", "h", "2")
	del(b, testBucket, "c", "x") // x never existed

	tests := []struct {
		name     string
		key, end string
		limit    int64
		want     []string
	}{
		{"all", "a", "z", 0, []string{"a=1", "b=2", "e=2", "g=1", "h=2"}},
		{"limit 2", "a", "z", 2, []string{"a=1", "b=2"}},
		{"limit 3 crosses a tombstone", "a", "z", 3, []string{"a=1", "b=2", "e=2"}},
		{"limit larger than result", "a", "z", 99, []string{"a=1", "b=2", "e=2", "g=1", "h=2"}},
		{"inner range", "b", "f", 0, []string{"b=2", "e=2"}},
		{"end is exclusive", "a", "b", 0, []string{"a=1"}},
		{"only a deleted key", "c", "d", 0, []string{}},
		{"empty range", "f", "f", 0, []string{}},
		{"start after end", "g", "a", 0, []string{}},
		{"tail", "g", "\xff", 0, []string{"g=1", "h=2"}},
		{"point committed", "a", "", 0, []string{"a=1"}},
		{"point overwritten", "e", "", 0, []string{"e=2"}},
		{"point buffered", "h", "", 0, []string{"h=2"}},
		{"point deleted", "c", "", 0, []string{}},
		{"point missing", "zz", "", 0, []string{}},
	}
	check := func(t *testing.T, phase string) {
		for _, tt := range tests {
			t.Run(phase+"/"+tt.name, func(t *testing.T) {
				if got := viaReadTx(b, testBucket, tt.key, tt.end, tt.limit); !slices.Equal(got, tt.want) {
					t.Errorf("ReadTx = %v, want %v", got, tt.want)
				}
				if got := viaBatchTx(b, testBucket, tt.key, tt.end, tt.limit); !slices.Equal(got, tt.want) {
					t.Errorf("BatchTx = %v, want %v", got, tt.want)
				}
			})
		}
	}
	check(t, "buffered")
	b.Commit()
	check(t, "committed")
}

func TestForEachMergesBufferAndCommitted(t *testing.T) {
	b, _ := NewTmpBackend(t)
	put(b, testBucket, "a", "1", "c", "1")
	b.Commit()
	put(b, testBucket, "b", "2", "a", "2")
	del(b, testBucket, "c")
	want := []string{"a=2", "b=2"}
	rt := b.ReadTx()
	rt.RLock()
	got := forEachPairs(rt, testBucket)
	errStop := fmt.Errorf("stop")
	var visited int
	err := rt.UnsafeForEach(testBucket, func(k, v []byte) error { visited++; return errStop })
	rt.RUnlock()
	if !slices.Equal(got, want) {
		t.Fatalf("ForEach = %v, want %v", got, want)
	}
	if err != errStop || visited != 1 {
		t.Fatalf("ForEach error = %v after %d visits, want stop after 1", err, visited)
	}
}

func TestWriteToNewBucket(t *testing.T) {
	b, _ := NewTmpBackend(t)
	bucket := []byte("extra")
	put(b, bucket, "k", "v")
	if got := viaReadTx(b, bucket, "k", "", 0); !slices.Equal(got, []string{"k=v"}) {
		t.Fatalf("before commit: %v", got)
	}
	b.Commit()
	if got := viaReadTx(b, bucket, "a", "z", 0); !slices.Equal(got, []string{"k=v"}) {
		t.Fatalf("after commit: %v", got)
	}
}

func reopen(t *testing.T, path string) Backend {
	t.Helper()
	b, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestCommitPersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	b, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	put(b, testBucket, "k1", "v1", "k2", "v2")
	b.Commit()
	put(b, testBucket, "k3", "v3") // committed by Close
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	b2 := reopen(t, path)
	want := []string{"k1=v1", "k2=v2", "k3=v3"}
	if got := viaReadTx(b2, testBucket, "k", "l", 0); !slices.Equal(got, want) {
		t.Fatalf("after reopen %v, want %v", got, want)
	}
}

// crash closes the bbolt db without committing the batch, as a process
// crash would leave the file.
func crash(t *testing.T, b Backend) {
	t.Helper()
	be := b.(*backend)
	be.commitSlot <- struct{}{}
	defer func() { <-be.commitSlot }()
	be.batch.mu.Lock()
	defer be.batch.mu.Unlock()
	be.read.mu.Lock()
	be.read.close()
	be.read.mu.Unlock()
	be.closed = true
	if err := be.db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPreCommitIsAtomicWithCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	var index uint64
	b := openWithIndexHook(t, path, &index)
	index = 5
	put(b, testBucket, "committed", "x")
	b.Commit()
	index = 6
	put(b, testBucket, "lost", "y")
	crash(t, b)

	b2 := reopen(t, path)
	rt := b2.ReadTx()
	rt.RLock()
	defer rt.RUnlock()
	got, ok := ReadUint64(rt, BucketMeta, MetaConsistentIndex)
	if !ok || got != 5 {
		t.Fatalf("consistent index = %d, %v; want 5", got, ok)
	}
	if pairs := readRange(rt, testBucket, "a", "z", 0); !slices.Equal(pairs, []string{"committed=x"}) {
		t.Fatalf("after crash %v, want only the committed pair", pairs)
	}
}

func TestPreCommitWritesAreVisible(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	calls := 0
	b, err := Open(Config{Path: path, PreCommit: func(tx UnsafeWriter) {
		calls++
		PutUint64(tx, BucketMeta, MetaTerm, uint64(calls))
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Commit()
	b.Commit()
	rt := b.ReadTx()
	rt.RLock()
	term, ok := ReadUint64(rt, BucketMeta, MetaTerm)
	rt.RUnlock()
	if !ok || term != 2 || b.PendingWrites() != 0 {
		t.Fatalf("term = %d, %v, pending %d; want 2, true, 0", term, ok, b.PendingWrites())
	}
}

func TestReadUint64(t *testing.T) {
	b, _ := NewTmpBackend(t)
	tx := b.BatchTx()
	tx.Lock()
	defer tx.Unlock()
	if _, ok := ReadUint64(tx, BucketMeta, MetaTerm); ok {
		t.Fatal("missing key read as ok")
	}
	PutUint64(tx, BucketMeta, MetaTerm, 0x0102030405060708)
	_, vals := tx.UnsafeRange(BucketMeta, MetaTerm, nil, 0)
	if !bytes.Equal(vals[0], []byte{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("encoding = %x, want big endian", vals[0])
	}
	if v, ok := ReadUint64(tx, BucketMeta, MetaTerm); !ok || v != 0x0102030405060708 {
		t.Fatalf("ReadUint64 = %x, %v", v, ok)
	}
	tx.UnsafePut(BucketMeta, MetaTerm, []byte{1})
	if _, ok := ReadUint64(tx, BucketMeta, MetaTerm); ok {
		t.Fatal("a 1-byte value read as ok")
	}
}

// TestRandomAgainstModel runs random puts, deletes and commits and compares
// every read with a plain map.
func TestRandomAgainstModel(t *testing.T) {
	b, _ := NewTmpBackend(t)
	rng := rand.New(rand.NewSource(1))
	model := map[string]string{}
	key := func() string { return fmt.Sprintf("k%02d", rng.Intn(40)) }
	for step := 0; step < 3000; step++ {
		switch op := rng.Intn(10); {
		case op < 5:
			k, v := key(), fmt.Sprint(step)
			put(b, testBucket, k, v)
			model[k] = v
		case op < 8:
			k := key()
			del(b, testBucket, k)
			delete(model, k)
		case op < 9:
			b.Commit()
		default:
			from, to := key(), key()
			limit := int64(rng.Intn(5))
			want := modelRange(model, from, to, limit)
			if got := viaReadTx(b, testBucket, from, to, limit); !slices.Equal(got, want) {
				t.Fatalf("step %d: range [%s,%s) limit %d = %v, want %v", step, from, to, limit, got, want)
			}
		}
	}
	if got, want := forEachPairs(b.ReadTx(), testBucket), modelRange(model, "", "\xff", 0); !slices.Equal(got, want) {
		t.Fatalf("ForEach = %v, want %v", got, want)
	}
}

func modelRange(model map[string]string, from, to string, limit int64) []string {
	out := []string{}
	for _, k := range slices.Sorted(mapsKeys(model)) {
		if k >= from && k < to && (limit == 0 || int64(len(out)) < limit) {
			out = append(out, k+"="+model[k])
		}
	}
	return out
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestConcurrentReadersAndWriter is meant for -race: readers range while a
// writer puts and commits; every reader must see a prefix of the writes in
// order, never a gap.
func TestConcurrentReadersAndWriter(t *testing.T) {
	b, _ := NewTmpBackend(t)
	const writes = 2000
	var wg sync.WaitGroup
	done := make(chan struct{})
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				got := viaReadTx(b, testBucket, "k", "l", 0)
				for i, kv := range got {
					if want := fmt.Sprintf("k%05d=%d", i, i); kv != want {
						t.Errorf("reader saw %q at %d, want %q", kv, i, want)
						return
					}
				}
			}
		}()
	}
	for i := 0; i < writes; i++ {
		put(b, testBucket, fmt.Sprintf("k%05d", i), fmt.Sprint(i))
		if i%100 == 99 {
			b.Commit()
		}
	}
	close(done)
	wg.Wait()
	if got := viaReadTx(b, testBucket, "k", "l", 0); len(got) != writes {
		t.Fatalf("read %d pairs, want %d", len(got), writes)
	}
}

func TestReopenWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	crash(t, reopen(t, path)) // creates the buckets, then closes without a commit
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crash(t, reopen(t, path))
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("opening an existing db changed the file")
	}
}

// TestCommitIDTellsCommittedStates: the ID moves with every commit, is the
// same after Close and the next Open when nothing was written in between,
// and moves when another writer commits to the file.
func TestCommitIDTellsCommittedStates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	b, err := Open(Config{Path: path, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	opened := b.CommitID()
	tx := b.BatchTx()
	tx.Lock()
	tx.UnsafePut(BucketKey, []byte("k"), []byte("v"))
	tx.Unlock()
	b.Commit()
	written := b.CommitID()
	if written == opened || written.TxID <= opened.TxID {
		t.Fatalf("commit with a write kept the ID: %+v then %+v", opened, written)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	closed := b.CommitID()
	b2, err := Open(Config{Path: path, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := b2.CommitID(); got != closed {
		t.Fatalf("reopened without writes: ID %+v, closed with %+v", got, closed)
	}
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(BucketMeta).Put([]byte("x"), nil) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b3, err := Open(Config{Path: path, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b3.Close()
	if got := b3.CommitID(); got.TxID == closed.TxID {
		t.Fatalf("another program's commit kept the ID %+v", got)
	}
}

// TestFileGrowsPastItsDataByAtMostOneStep: bbolt grows the file by
// fileGrowStep beyond what a commit needs (counted from the page after its
// high-water mark), so the file never stands more than 4 MiB and a page
// above dbSize; with bbolt's default step of 16 MiB it would. Grow steps
// are only taken with fsync on (NoGrowSync skips the truncate).
func TestFileGrowsPastItsDataByAtMostOneStep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	b, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	value := bytes.Repeat([]byte("v"), 1024)
	maxOvershoot := int64(0)
	for commit := range 48 {
		tx := b.BatchTx()
		tx.Lock()
		for i := range 512 {
			tx.UnsafePut(testBucket, fmt.Appendf(nil, "%04d-%04d", commit, i), value)
		}
		tx.Unlock()
		b.Commit()
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		maxOvershoot = max(maxOvershoot, st.Size()-b.Size())
	}
	if b.Size() < 3*fileGrowStep {
		t.Fatalf("dbSize %d: the test must grow the file by several steps", b.Size())
	}
	if limit := int64(4<<20 + os.Getpagesize()); maxOvershoot > limit {
		t.Fatalf("file stood %d bytes above dbSize, want at most %d", maxOvershoot, limit)
	}
}
