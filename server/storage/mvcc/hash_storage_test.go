package mvcc

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairnkv/cairn/server/storage/backend"
)

// TestCompactionStoresHash checks that each compaction stores the hash the
// key space had at the compacted revision just before it, relative to the
// previous compaction, and that HashByRev returns it afterwards.
func TestCompactionStoresHash(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	buildHistory(s)

	var want []KeyValueHash
	for _, rev := range []int64{3, 5, 7, 8} {
		before, _, err := s.HashByRev(rev)
		if err != nil {
			t.Fatalf("HashByRev(%d) before compaction: %v", rev, err)
		}
		waitCompaction(t, mustCompact(t, s, rev))
		want = append(want, before)

		got := s.Hashes()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after compacting at %d: Hashes() = %+v, want %+v", rev, got, want)
		}
		after, cur, err := s.HashByRev(rev)
		if err != nil || after != before || cur != s.Rev() {
			t.Fatalf("HashByRev(%d) after compaction = %+v, %d, %v; want %+v, %d", rev, after, cur, err, before, s.Rev())
		}
	}
	if want[0].CompactRevision != -1 || want[1].CompactRevision != 3 || want[3].CompactRevision != 7 {
		t.Fatalf("compact revisions of the stored hashes: %+v", want)
	}
}

// TestCompactionHashesAreBounded checks that only the newest ten hashes stay.
func TestCompactionHashesAreBounded(t *testing.T) {
	s, _, _ := newTestStore(t, testConfig)
	for i := range 14 {
		s.Put([]byte("k"), []byte(fmt.Sprint(i)), 0)
	}
	for rev := int64(2); rev <= 15; rev++ {
		waitCompaction(t, mustCompact(t, s, rev))
	}
	got := s.Hashes()
	if len(got) != maxCompactionHashes || got[0].Revision != 6 || got[len(got)-1].Revision != 15 {
		t.Fatalf("Hashes() = %+v; want revisions 6..15", got)
	}
}

// TestResumedCompactionStoresNoHash checks etcd's rule: a compaction
// scheduled while the previous one had not finished (here: resumed after a
// restart) does not store its hash; the next one does again.
func TestResumedCompactionStoresNoHash(t *testing.T) {
	s, b, path := newTestStore(t, testConfig)
	buildHistory(s)
	waitCompaction(t, mustCompact(t, s, 3))
	tx := b.BatchTx()
	tx.Lock()
	putRevMeta(tx, backend.MetaScheduledCompactRev, 6)
	tx.Unlock()

	s, b = reopen(t, s, b, path, testConfig)
	deadline := time.Now().Add(10 * time.Second)
	for finishedCompactRev(b) != 6 {
		if time.Now().After(deadline) {
			t.Fatal("the resumed compaction did not finish")
		}
		time.Sleep(time.Millisecond)
	}
	if got := s.Hashes(); len(got) != 0 {
		t.Fatalf("Hashes() after a resumed compaction = %+v, want none", got)
	}
	waitCompaction(t, mustCompact(t, s, 7))
	if got := s.Hashes(); len(got) != 1 || got[0].Revision != 7 || got[0].CompactRevision != 6 {
		t.Fatalf("Hashes() after the next compaction = %+v, want one at 7 relative to 6", got)
	}
}

func finishedCompactRev(b backend.Backend) int64 {
	tx := b.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	rev, _ := readRevMeta(tx, backend.MetaFinishedCompactRev)
	return rev
}
