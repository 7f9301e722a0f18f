package backend

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// openWithIndexHook opens a backend at path whose PreCommit stores *index
// as the consistent index, as the member's hook does. The caller closes it
// (or crashes it).
func openWithIndexHook(t *testing.T, path string, index *uint64) Backend {
	t.Helper()
	hook := func(tx UnsafeWriter) { PutUint64(tx, BucketMeta, MetaConsistentIndex, *index) }
	b, err := Open(Config{Path: path, PreCommit: hook})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// holdCommits makes every commit of b stop just before bbolt commits until
// the returned release is called; entered receives once per held commit.
func holdCommits(b Backend) (entered <-chan struct{}, release func()) {
	in := make(chan struct{}, 16)
	gate := make(chan struct{})
	b.(*backend).commitWriting = func() {
		in <- struct{}{}
		<-gate
	}
	return in, func() { close(gate) }
}

// TestWritersAndReadersDoNotWaitForACommitBeingWritten holds a commit in
// its bbolt write and checks that the batch and readers go on meanwhile,
// that they see both the cut writes and the newer ones, and that the
// commit holds exactly what was released at its cut.
func TestWritersAndReadersDoNotWaitForACommitBeingWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	var index uint64
	b := openWithIndexHook(t, path, &index)
	entered, release := holdCommits(b)
	index = 7
	put(b, testBucket, "a", "cut")
	done := b.StartCommit()
	<-entered
	index = 8 // the cut has run the hook already: the commit must keep 7

	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		put(b, testBucket, "b", "after-cut")
		del(b, testBucket, "a")
		put(b, testBucket, "a", "rewritten")
	}()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("a write waited for the commit being written")
	}
	want := []string{"a=rewritten", "b=after-cut"}
	if got := viaReadTx(b, testBucket, "a", "z", 0); !slices.Equal(got, want) {
		t.Fatalf("readers during the commit see %v, want %v", got, want)
	}
	if got := viaBatchTx(b, testBucket, "a", "z", 0); !slices.Equal(got, want) {
		t.Fatalf("the batch during the commit sees %v, want %v", got, want)
	}
	select {
	case <-done:
		t.Fatal("StartCommit's channel closed before the commit was durable")
	default:
	}
	release()
	<-done
	if got := viaReadTx(b, testBucket, "a", "z", 0); !slices.Equal(got, want) {
		t.Fatalf("readers after the commit see %v, want %v", got, want)
	}
	crash(t, b)

	b2 := reopen(t, path)
	if got := viaReadTx(b2, testBucket, "a", "z", 0); !slices.Equal(got, []string{"a=cut"}) {
		t.Fatalf("after a crash %v, want exactly the cut's writes", got)
	}
	rt := b2.ReadTx()
	rt.RLock()
	defer rt.RUnlock()
	if got, _ := ReadUint64(rt, BucketMeta, MetaConsistentIndex); got != 7 {
		t.Fatalf("consistent index %d after the crash, want the cut's 7", got)
	}
}

// TestBatchSeesItsOwnHeldWrites: inside one Lock, reads of the batch see
// the writes it made since Lock, newest first, before Unlock publishes them.
func TestBatchSeesItsOwnHeldWrites(t *testing.T) {
	b, _ := NewTmpBackend(t)
	put(b, testBucket, "a", "1", "c", "3")
	b.Commit()
	put(b, testBucket, "d", "4")
	tx := b.BatchTx()
	tx.Lock()
	tx.UnsafePut(testBucket, []byte("b"), []byte("2"))
	tx.UnsafeDelete(testBucket, []byte("c"))
	tx.UnsafePut(testBucket, []byte("a"), []byte("old"))
	tx.UnsafePut(testBucket, []byte("a"), []byte("new"))
	got := readRange(tx, testBucket, "a", "z", 0)
	single := readRange(tx, testBucket, "a", "", 0)
	gone := readRange(tx, testBucket, "c", "", 0)
	each := forEachPairs(tx, testBucket)
	readers := viaReadTxUnlockedRange(b)
	tx.Unlock()
	want := []string{"a=new", "b=2", "d=4"}
	for name, g := range map[string][]string{"range": got, "forEach": each} {
		if !slices.Equal(g, want) {
			t.Errorf("%s inside the lock: %v, want %v", name, g, want)
		}
	}
	if !slices.Equal(single, []string{"a=new"}) || len(gone) != 0 {
		t.Errorf("gets inside the lock: a %v, c %v; want a=new and no c", single, gone)
	}
	if want := []string{"a=1", "c=3", "d=4"}; !slices.Equal(readers, want) {
		t.Errorf("readers saw %v before Unlock, want %v", readers, want)
	}
}

// viaReadTxUnlockedRange reads every pair through the read view from
// another goroutine (the caller holds the batch lock).
func viaReadTxUnlockedRange(b Backend) []string {
	out := make(chan []string)
	go func() { out <- viaReadTx(b, testBucket, "a", "z", 0) }()
	return <-out
}

// TestCommitThatMayRemapStillCommits: with a small initial mmap, commits
// grow the file past the map, so bbolt must remap while the read view is
// closed (the slow path); the data must come through whole.
func TestCommitThatMayRemapStillCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	b, err := Open(Config{Path: path, MmapSize: 1 << 20, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	value := bytes.Repeat([]byte("v"), 4096)
	for round := range 8 {
		tx := b.BatchTx()
		tx.Lock()
		for i := range 500 {
			tx.UnsafeSeqPut(testBucket, fmt.Appendf(nil, "k%02d-%04d", round, i), value)
		}
		tx.Unlock()
		b.Commit()
	}
	if b.Size() < 16<<20 {
		t.Fatalf("size %d: the test wants a file well past the 1 MiB map", b.Size())
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := reopen(t, path)
	if n := len(viaReadTx(b2, testBucket, "k", "l", 0)); n != 8*500 {
		t.Fatalf("%d pairs after reopen, want %d", n, 8*500)
	}
}

// TestCommitsAndDefragInterleave runs commits (synchronous and in the
// background) while a defrag copies and swaps, and checks that nothing
// released is lost across the swap.
func TestCommitsAndDefragInterleave(t *testing.T) {
	b, path := NewTmpBackend(t)
	fillKeys(b, 20000, 100)
	stop := make(chan struct{})
	wrote := make(chan int)
	go func() {
		n := 0
		defer func() { wrote <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			put(b, BucketLease, fmt.Sprintf("w%06d", n), "x")
			n++
			if n%50 == 0 {
				<-b.StartCommit()
			}
		}
	}()
	for range 3 {
		if err := b.Defrag(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	n := <-wrote
	if got := len(viaReadTx(b, BucketLease, "w", "x", 0)); got != n {
		t.Fatalf("readers see %d of %d writes after the defrags", got, n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := reopen(t, path)
	if got := len(viaReadTx(b2, BucketLease, "w", "x", 0)); got != n {
		t.Fatalf("%d of %d writes after reopening", got, n)
	}
	if got := len(viaReadTx(b2, BucketKey, "key", "kez", 0)); got != 20000 {
		t.Fatalf("%d of 20000 keys after reopening", got)
	}
}

// TestDeleteAtMatchesBucketDelete deletes through one shared cursor, as a
// commit does, keys present, missing (between, before and after the others)
// and a nested bucket's, and checks what is left and the errors.
func TestDeleteAtMatchesBucketDelete(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		for i := 0; i < 2000; i += 2 { // enough keys for several pages
			if err := b.Put(fmt.Appendf(nil, "k%05d", i), make([]byte, 100)); err != nil {
				return err
			}
		}
		if _, err := b.CreateBucket([]byte("nested")); err != nil {
			return err
		}
		c := b.Cursor()
		for _, tc := range []struct {
			key     string
			wantErr error
		}{
			{"a", nil}, {"k00000", nil}, {"k00001", nil}, {"k00998", nil},
			{"k01000", nil}, {"k01998", nil}, {"k01998", nil}, {"zzz", nil}, // k01998 twice: the second finds nothing
			{"nested", bolterrors.ErrIncompatibleValue},
		} {
			if err := deleteAt(c, []byte(tc.key)); !errors.Is(err, tc.wantErr) {
				t.Errorf("deleteAt(%q) = %v, want %v", tc.key, err, tc.wantErr)
			}
		}
		for _, gone := range []string{"k00000", "k00998", "k01000", "k01998"} {
			if b.Get([]byte(gone)) != nil {
				t.Errorf("%s is still there", gone)
			}
		}
		n := 0
		b.ForEach(func(k, v []byte) error { n++; return nil })
		if n != 1000-4+1 {
			t.Errorf("%d keys left, want %d", n, 1000-4+1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
