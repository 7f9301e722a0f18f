package backend

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// model is what a backend should hold: bucket/key -> value.
type model map[string]string

func (m model) put(b Backend, bucket []byte, k, v string) {
	put(b, bucket, k, v)
	m[string(bucket)+"/"+k] = v
}

func (m model) del(b Backend, bucket []byte, k string) {
	del(b, bucket, k)
	delete(m, string(bucket)+"/"+k)
}

func (m model) listing() []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func modelOf(t *testing.T, b Backend) model {
	t.Helper()
	m := model{}
	for _, kv := range dump(t, b) {
		k, v, _ := cutLast(kv)
		m[k] = v
	}
	return m
}

func cutLast(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

func sortedDump(t *testing.T, b Backend) []string {
	out := dump(t, b)
	sort.Strings(out)
	return out
}

// TestDefragKeepsWritesMadeWhileItRuns writes, deletes and commits in every
// bucket while the copy and the catch-up run: the writes must not wait for
// the defrag, readers must see them at once, and the swapped-in file must
// hold all of them, those not committed at the swap in its batch.
func TestDefragKeepsWritesMadeWhileItRuns(t *testing.T) {
	b, path := NewTmpBackend(t)
	fillKeys(b, 25000, 50) // several copy batches
	m := modelOf(t, b)
	be := b.(*backend)
	copied := 0
	be.defragCopied = func() error {
		copied++
		m.put(b, BucketKey, fmt.Sprintf("during-copy-%d", copied), "c")
		m.del(b, BucketKey, fmt.Sprintf("key%06d", copied))
		m.put(b, BucketLease, fmt.Sprintf("lease-%d", copied), "l")
		m.put(b, BucketMeta, "consistent_index", fmt.Sprint(copied))
		if got := viaReadTx(b, BucketKey, fmt.Sprintf("during-copy-%d", copied), "", 0); len(got) != 1 {
			return fmt.Errorf("a reader did not see a write made during the copy: %v", got)
		}
		b.Commit()
		return nil
	}
	be.defragCaughtUp = func() {
		m.put(b, BucketAuthUsers, "after-catch-up", "committed")
		m.del(b, BucketKey, "key000100")
		b.Commit()
		m.put(b, BucketKey, "uncommitted", "u")
		m.del(b, BucketKey, "key000200")
	}
	if err := b.Defrag(); err != nil {
		t.Fatal(err)
	}
	if copied < 3 {
		t.Fatalf("copy hook ran %d times, want at least 3", copied)
	}
	if got, want := sortedDump(t, b), m.listing(); !slices.Equal(got, want) {
		t.Fatalf("after defrag: %d pairs, want %d\n%v", len(got), len(want), diff(got, want))
	}
	if b.PendingWrites() == 0 {
		t.Error("the uncommitted writes were committed by the swap")
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}

	// The next commit makes the writes uncommitted at the swap durable, on
	// the new file; a crash after it keeps them all.
	b.Commit()
	if got, want := sortedDump(t, b), m.listing(); !slices.Equal(got, want) {
		t.Fatalf("after the commit that followed the defrag: %v", diff(got, want))
	}
	put(b, BucketKey, "lost", "in the crash")
	crash(t, b)
	b2 := reopen(t, path)
	if got, want := sortedDump(t, b2), m.listing(); !slices.Equal(got, want) {
		t.Fatalf("after crash: %d pairs, want %d\n%v", len(got), len(want), diff(got, want))
	}
}

func diff(got, want []string) string {
	var out []string
	for _, g := range got {
		if !slices.Contains(want, g) {
			out = append(out, "+"+g)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, "-"+w)
		}
	}
	if len(out) > 10 {
		out = out[:10]
	}
	return fmt.Sprint(out)
}

// TestDefragWritesToANewBucket: a bucket first written during the copy is
// in the new file.
func TestDefragWritesToANewBucket(t *testing.T) {
	b, path := NewTmpBackend(t)
	fillKeys(b, 100, 10)
	b.(*backend).defragCopied = func() error {
		put(b, []byte("later"), "k", "v")
		b.Commit()
		return nil
	}
	if err := b.Defrag(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bolt.Tx) error {
		if bk := tx.Bucket([]byte("later")); bk == nil || string(bk.Get([]byte("k"))) != "v" {
			t.Error("bucket created during the defrag is missing from the new file")
		}
		return nil
	})
}

// TestSnapshotOutlivesDefrag: a snapshot taken before a defrag still reads
// the old file after the swap, and the old file is closed with it.
func TestSnapshotOutlivesDefrag(t *testing.T) {
	b, _ := NewTmpBackend(t)
	fillKeys(b, 2000, 100)
	snap := b.Snapshot()
	del(b, BucketKey, "key000000")
	if err := b.Defrag(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "snap.db")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snap.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dumpFile(t, out); !slices.Contains(got, "key/key000000="+string(slices.Repeat([]byte("v"), 100))) {
		t.Fatal("snapshot taken before the defrag lost a key deleted after it")
	}
	b.(*backend).retired.Wait() // the old file is closed once the snapshot is
}

// TestCloseStopsARunningDefrag: Close during the copy ends the defrag with
// an error, removes the new file, and the db keeps every write.
func TestCloseStopsARunningDefrag(t *testing.T) {
	b, path := NewTmpBackend(t)
	fillKeys(b, 25000, 10)
	want := dump(t, b)
	closed := make(chan error, 1)
	first := true
	b.(*backend).defragCopied = func() error {
		if first {
			first = false
			go func() { closed <- b.Close() }()
			for !b.(*backend).stopping.Load() {
				time.Sleep(time.Millisecond)
			}
		}
		return nil
	}
	if err := b.Defrag(); !errors.Is(err, errClosed) {
		t.Fatalf("Defrag during Close: %v, want %v", err, errClosed)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
	if got := dumpFile(t, path); !slices.Equal(got, want) {
		t.Fatal("data changed")
	}
}

// TestConcurrentDefragsAndSnapshots runs defrags from two goroutines while a
// writer commits and snapshots are streamed (meant for -race).
func TestConcurrentDefragsAndSnapshots(t *testing.T) {
	b, _ := NewTmpBackend(t)
	fillKeys(b, 3000, 20)
	done := make(chan error, 2)
	for range 2 {
		go func() {
			for range 3 {
				if err := b.Defrag(); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	m := modelOf(t, b)
	for i := range 300 {
		m.put(b, BucketKey, fmt.Sprintf("w%04d", i), "x")
		if i%7 == 0 {
			m.del(b, BucketKey, fmt.Sprintf("key%06d", i))
		}
		if i%20 == 0 {
			b.Commit()
			s := b.Snapshot()
			_, _ = s.WriteTo(io.Discard)
			_ = s.Close()
		}
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got, want := sortedDump(t, b), m.listing(); !slices.Equal(got, want) {
		t.Fatalf("%v", diff(got, want))
	}
}

// TestDefragPacerRestsInProportion: the copy rests as long as it worked (a
// 50% share), never longer than defragMaxRest; time spent waiting for a
// gap in the WAL's syncs is neither work nor more rest.
func TestDefragPacerRestsInProportion(t *testing.T) {
	for _, tc := range []struct {
		worked, waited, want time.Duration
	}{
		{10 * time.Millisecond, 0, 10 * time.Millisecond},
		{0, 0, 0},
		{time.Second, 0, defragMaxRest},
		{10 * time.Millisecond, 4 * time.Millisecond, 6 * time.Millisecond},
		{2 * time.Millisecond, 5 * time.Millisecond, 0},
		{time.Second, 10 * time.Millisecond, defragMaxRest - 10*time.Millisecond},
	} {
		clock := time.Unix(0, 0)
		var slept time.Duration
		p := &defragPacer{
			now:   func() time.Time { return clock },
			sleep: func(d time.Duration) { slept += d; clock = clock.Add(d) },
			since: clock,
		}
		clock = clock.Add(tc.worked)
		p.awaitDiskGap(func() { clock = clock.Add(tc.waited) })
		p.rest()
		if slept != tc.want {
			t.Errorf("worked %v, waited %v: rested %v, want %v", tc.worked, tc.waited, slept, tc.want)
		}
		if !p.since.Equal(clock) || p.waitedSince != 0 {
			t.Errorf("worked %v: next work counted from %v (waited %v), want %v (0)", tc.worked, p.since, p.waitedSince, clock)
		}
	}
}

// TestDefragSyncsInTheWALsGaps: every bulk sync of a defrag, copy batches,
// catch-up rounds and release steps of the old file, first asks for a gap
// in the WAL's syncs.
func TestDefragSyncsInTheWALsGaps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	var asked atomic.Int64
	b, err := Open(Config{Path: path, UnsafeNoFsync: true, AwaitDiskGap: func() { asked.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const pairs, valueSize = 2048, 1024
	fillKeys(b, pairs, valueSize)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Defrag(); err != nil {
		t.Fatal(err)
	}
	b.(*backend).retired.Wait()
	copyBatches := int64(pairs * valueSize / defragBatchBytes)
	releaseSteps := st.Size() / retireShrinkStep
	if got := asked.Load(); got < copyBatches+releaseSteps {
		t.Fatalf("the defrag asked for %d disk gaps, want at least one per copy batch (%d) and per release step of the old file (%d)", got, copyBatches, releaseSteps)
	}
}

// TestDefragNeverCommits: only the member may commit (its PreCommit hook
// stores the consistent index that must describe the data), so a defrag
// must not commit the writes released before it started, and must still
// carry them into the new file, uncommitted, and lose them in a crash
// exactly as the old file would have.
func TestDefragNeverCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	commits := 0
	b, err := Open(Config{Path: path, UnsafeNoFsync: true, PreCommit: func(UnsafeWriter) { commits++ }})
	if err != nil {
		t.Fatal(err)
	}
	fillKeys(b, 100, 10)
	b.Commit()
	m := modelOf(t, b)
	commits = 0
	put(b, BucketKey, "released-before", "v")
	del(b, BucketKey, "key000001")
	if err := b.Defrag(); err != nil {
		t.Fatal(err)
	}
	if commits != 0 {
		t.Fatalf("Defrag committed the batch %d time(s)", commits)
	}
	if got := viaReadTx(b, BucketKey, "released-before", "", 0); len(got) != 1 {
		t.Fatalf("a write released before the defrag is not readable after it: %v", got)
	}
	if got := viaReadTx(b, BucketKey, "key000001", "", 0); len(got) != 0 {
		t.Fatalf("a delete released before the defrag was undone: %v", got)
	}
	crash(t, b)
	b2 := reopen(t, path)
	if got, want := sortedDump(t, b2), m.listing(); !slices.Equal(got, want) {
		t.Fatalf("after a crash: uncommitted writes from before the defrag are durable: %v", diff(got, want))
	}
}

// TestShrinkInStepsEndsAtZero: a retired file is truncated step by step
// down to nothing, and the first failing truncate ends it.
func TestShrinkInStepsEndsAtZero(t *testing.T) {
	tests := []struct {
		name       string
		size, step int64
		failAt     int64 // a size whose truncate fails; -1 for none
		want       []int64
	}{
		{"steps", 10, 4, -1, []int64{6, 2, 0}},
		{"exact", 8, 4, -1, []int64{4, 0}},
		{"smaller than a step", 3, 4, -1, []int64{0}},
		{"empty", 0, 4, -1, nil},
		{"stops at an error", 10, 4, 6, []int64{6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int64
			shrinkInSteps(func(size int64) error {
				got = append(got, size)
				if size == tt.failAt {
					return errors.New("injected")
				}
				return nil
			}, tt.size, tt.step, 0)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("truncated to %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDefragGivesTheOldFilesSpaceBack: once an online defrag has retired
// the old file, the old file (seen through a descriptor the test opened
// before) has been truncated to nothing rather than left for its last
// close to free at once.
func TestDefragGivesTheOldFilesSpaceBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	b, err := Open(Config{Path: path, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	value := bytes.Repeat([]byte("v"), 1024)
	for round := range 20 {
		tx := b.BatchTx()
		tx.Lock()
		for i := range 500 {
			tx.UnsafePut(testBucket, fmt.Appendf(nil, "%02d-%04d", round, i), value)
		}
		tx.Unlock()
		b.Commit()
	}
	old, err := os.Open(path) // the file the defrag will retire
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := b.Defrag(); err != nil {
		t.Fatal(err)
	}
	b.(*backend).retired.Wait()
	st, err := old.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 0 {
		t.Fatalf("the retired file still has %d bytes", st.Size())
	}
}

// TestDropInSlicesCoversTheMappingOnce: the retired file's mapping is
// dropped in consecutive slices that cover it exactly.
func TestDropInSlicesCoversTheMappingOnce(t *testing.T) {
	type call struct {
		addr uintptr
		size int64
	}
	var calls []call
	record := func(addr uintptr, size int64) error { calls = append(calls, call{addr, size}); return nil }
	dropInSlices(record, 0x1000, 10<<20+5, 4<<20, 0)
	want := []call{{0x1000, 4 << 20}, {0x1000 + 4<<20, 4 << 20}, {0x1000 + 8<<20, 2<<20 + 5}}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	calls = nil
	dropInSlices(record, 0x1000, 0, 4<<20, 0)
	if len(calls) != 0 {
		t.Fatalf("an empty mapping was dropped: %v", calls)
	}
}

// TestDefragSyncsTheCopyInSmallBatches: each bulk-copy batch is synced on
// its own, so the WAL's fsyncs never queue behind more than about
// defragBatchBytes of the copy; 4 MiB of pairs must take several batches,
// not the one that defragBatchKeys alone would allow.
func TestDefragSyncsTheCopyInSmallBatches(t *testing.T) {
	b, _ := NewTmpBackend(t)
	const pairs, valueSize = 4096, 1024
	fillKeys(b, pairs, valueSize)
	batches := 0
	b.(*backend).defragCopied = func() error {
		batches++
		return nil
	}
	if err := b.Defrag(); err != nil {
		t.Fatal(err)
	}
	if want := pairs * valueSize / defragBatchBytes; batches < want {
		t.Errorf("bulk copy synced %d times, want at least %d (one per %d bytes)", batches, want, defragBatchBytes)
	}
}
