package mvcc

import (
	"reflect"
	"testing"
	"unsafe"
)

// exampleKeyIndex: put@2, put@4, delete@6, put@8, put@10, delete@12, put@14.
func exampleKeyIndex() *keyIndex {
	ki := newKeyIndex([]byte("k"))
	ki.put(Revision{Main: 2})
	ki.put(Revision{Main: 4})
	ki.tombstone(Revision{Main: 6})
	ki.put(Revision{Main: 8})
	ki.put(Revision{Main: 10})
	ki.tombstone(Revision{Main: 12})
	ki.put(Revision{Main: 14, Sub: 1})
	return ki
}

func TestKeyIndexGet(t *testing.T) {
	ki := exampleKeyIndex()
	tests := []struct {
		atRev            int64
		modified, create int64
		ver              int64
		found            bool
	}{
		{1, 0, 0, 0, false},
		{2, 2, 2, 1, true},
		{3, 2, 2, 1, true},
		{5, 4, 2, 2, true},
		{6, 0, 0, 0, false}, // deleted at 6
		{7, 0, 0, 0, false},
		{8, 8, 8, 1, true}, // re-created: version restarts at 1
		{11, 10, 8, 2, true},
		{12, 0, 0, 0, false},
		{14, 14, 14, 1, true},
		{100, 14, 14, 1, true},
	}
	for _, tt := range tests {
		mod, created, ver, err := ki.get(tt.atRev)
		if (err == nil) != tt.found || mod.Main != tt.modified || created.Main != tt.create || ver != tt.ver {
			t.Errorf("get(%d) = %v %v v%d %v; want %d %d v%d found=%v",
				tt.atRev, mod, created, ver, err, tt.modified, tt.create, tt.ver, tt.found)
		}
	}
}

func TestKeyIndexTombstoneOfDeletedKeyFails(t *testing.T) {
	ki := newKeyIndex([]byte("k"))
	ki.put(Revision{Main: 2})
	if err := ki.tombstone(Revision{Main: 3}); err != nil {
		t.Fatal(err)
	}
	if err := ki.tombstone(Revision{Main: 4}); err != errRevisionNotFound {
		t.Fatalf("second tombstone: %v, want errRevisionNotFound", err)
	}
}

func revs(mains ...int64) []Revision {
	out := []Revision{}
	for _, m := range mains {
		sub := int64(0)
		if m == 14 {
			sub = 1
		}
		out = append(out, Revision{Main: m, Sub: sub})
	}
	return out
}

func TestKeyIndexCompactAndKeep(t *testing.T) {
	tests := []struct {
		atRev    int64
		wantGens [][]Revision
		wantKept []Revision // what compact keeps
		wantKeep []Revision // what keep (for hashing) keeps
	}{
		{1, [][]Revision{revs(2, 4, 6), revs(8, 10, 12), revs(14)}, revs(), revs()},
		{2, [][]Revision{revs(2, 4, 6), revs(8, 10, 12), revs(14)}, revs(2), revs(2)},
		{5, [][]Revision{revs(4, 6), revs(8, 10, 12), revs(14)}, revs(4), revs(4)},
		// A tombstone exactly at atRev is kept by compact, not by keep.
		{6, [][]Revision{revs(6), revs(8, 10, 12), revs(14)}, revs(6), revs()},
		{7, [][]Revision{revs(8, 10, 12), revs(14)}, revs(), revs()},
		{11, [][]Revision{revs(10, 12), revs(14)}, revs(10), revs(10)},
		{13, [][]Revision{revs(14)}, revs(), revs()},
		{14, [][]Revision{revs(14)}, revs(14), revs(14)},
	}
	for _, tt := range tests {
		keep := &revisionSet{}
		exampleKeyIndex().keep(tt.atRev, keep)
		if got := sortedRevs(keep); !reflect.DeepEqual(got, tt.wantKeep) {
			t.Errorf("keep(%d) = %v, want %v", tt.atRev, got, tt.wantKeep)
		}
		ki := exampleKeyIndex()
		kept := &revisionSet{}
		ki.compact(tt.atRev, kept)
		if got := sortedRevs(kept); !reflect.DeepEqual(got, tt.wantKept) {
			t.Errorf("compact(%d) kept %v, want %v", tt.atRev, got, tt.wantKept)
		}
		var gens [][]Revision
		for _, g := range ki.allGenerations() {
			gens = append(gens, append([]Revision{}, g.revs...))
		}
		if !reflect.DeepEqual(gens, tt.wantGens) {
			t.Errorf("compact(%d) generations %v, want %v", tt.atRev, gens, tt.wantGens)
		}
		// Reads at or after atRev are unchanged by compaction.
		for rev := tt.atRev; rev <= 15; rev++ {
			m1, c1, v1, e1 := exampleKeyIndex().get(rev)
			m2, c2, v2, e2 := ki.get(rev)
			if m1 != m2 || c1 != c2 || v1 != v2 || e1 != e2 {
				t.Errorf("compact(%d) changed get(%d)", tt.atRev, rev)
			}
		}
	}
}

func TestKeyIndexCompactAfterFinalTombstoneEmptiesIt(t *testing.T) {
	ki := newKeyIndex([]byte("k"))
	ki.put(Revision{Main: 2})
	ki.tombstone(Revision{Main: 3})
	ki.compact(3, &revisionSet{})
	if ki.isEmpty() {
		t.Fatal("tombstone at the compact revision must stay")
	}
	ki.compact(4, &revisionSet{})
	if !ki.isEmpty() {
		t.Fatalf("keyIndex after compacting past its tombstone: %+v", ki.allGenerations())
	}
}

func TestKeyIndexSince(t *testing.T) {
	ki := newKeyIndex([]byte("k"))
	ki.put(Revision{Main: 2})
	ki.put(Revision{Main: 3, Sub: 0})
	ki.put(Revision{Main: 3, Sub: 2})
	ki.tombstone(Revision{Main: 4})
	ki.put(Revision{Main: 5})
	want := []Revision{{3, 2}, {4, 0}, {5, 0}}
	if got := ki.since(3); !reflect.DeepEqual(got, want) {
		t.Fatalf("since(3) = %v, want %v", got, want)
	}
}

// sortedRevs seals s and returns its revisions in order.
func sortedRevs(s *revisionSet) []Revision {
	return append([]Revision{}, s.seal().revs...)
}

func TestRevisionBytes(t *testing.T) {
	tests := []struct {
		rev  Revision
		tomb bool
		want string
	}{
		{Revision{1, 0}, false, "0000000000000001_0000000000000000"},
		{Revision{0x0102, 3}, true, "0000000000000102_0000000000000003t"},
	}
	for _, tt := range tests {
		b := RevToBytes(tt.rev)
		if tt.tomb {
			b = TombstoneRevToBytes(tt.rev)
		}
		got := hexWithSeparators(b)
		if got != tt.want {
			t.Errorf("bytes of %v = %s, want %s", tt.rev, got, tt.want)
		}
		if BytesToRev(b) != tt.rev || IsTombstone(b) != tt.tomb || !validRevBytes(b) {
			t.Errorf("round trip of %v failed", tt.rev)
		}
	}
	// Byte order is revision order.
	if string(RevToBytes(Revision{1, 5})) >= string(RevToBytes(Revision{2, 0})) ||
		string(TombstoneRevToBytes(Revision{2, 0})) >= string(RevToBytes(Revision{2, 1})) {
		t.Fatal("revision bytes do not sort in revision order")
	}
}

// hexWithSeparators prints revision bytes as hex, keeping '_' and 't' readable.
func hexWithSeparators(b []byte) string {
	const digits = "0123456789abcdef"
	out := []byte{}
	for i, c := range b {
		if i == 8 || i == 17 {
			out = append(out, c)
			continue
		}
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func TestKeyIndexCompactAtDeleteAndRecreateInOneTxn(t *testing.T) {
	// One txn at 18 deletes the key (18.0) and puts it again (18.1).
	ki := newKeyIndex([]byte("k"))
	ki.put(Revision{Main: 17})
	ki.tombstone(Revision{Main: 18})
	ki.put(Revision{Main: 18, Sub: 1})
	ki.put(Revision{Main: 20})

	keep := &revisionSet{}
	ki.keep(18, keep)
	if want := []Revision{{18, 1}}; !reflect.DeepEqual(sortedRevs(keep), want) {
		t.Fatalf("keep(18) = %v, want %v", sortedRevs(keep), want)
	}
	kept := &revisionSet{}
	ki.compact(18, kept)
	if want := []Revision{{18, 0}, {18, 1}}; !reflect.DeepEqual(sortedRevs(kept), want) {
		t.Fatalf("compact(18) kept %v, want %v", sortedRevs(kept), want)
	}
	if mod, _, ver, err := ki.get(19); err != nil || mod != (Revision{18, 1}) || ver != 1 {
		t.Fatalf("get(19) after compaction = %v v%d %v", mod, ver, err)
	}
}

// allGenerations copies the generations of ki, oldest first.
func (ki *keyIndex) allGenerations() []generation {
	gens := make([]generation, ki.numGenerations())
	for i := range gens {
		gens[i] = *ki.generation(i)
	}
	return gens
}

// TestKeyIndexFitsSixtyFourBytes guards the index's memory: one keyIndex per
// key of the store, in Go's 64-byte size class.
func TestKeyIndexFitsSixtyFourBytes(t *testing.T) {
	if size := unsafe.Sizeof(keyIndex{}); size > 64 {
		t.Errorf("keyIndex is %d bytes, want at most 64", size)
	}
}

// The tree index's Put answers the creation revision and version the key has
// with the change, as a Get at the change's revision then does.
func TestTreeIndexPutReportsGeneration(t *testing.T) {
	ti := newTreeIndex()
	steps := []struct {
		rev          Revision
		tombstone    bool
		created, ver int64
	}{
		{rev: Revision{Main: 2}, created: 2, ver: 1},
		{rev: Revision{Main: 3}, created: 2, ver: 2},
		{rev: Revision{Main: 3, Sub: 1}, created: 2, ver: 3},
		{rev: Revision{Main: 4}, tombstone: true},
		{rev: Revision{Main: 5, Sub: 2}, created: 5, ver: 1},
		{rev: Revision{Main: 6}, created: 5, ver: 2},
	}
	key := []byte("k")
	for _, s := range steps {
		if s.tombstone {
			if err := ti.Tombstone(key, s.rev); err != nil {
				t.Fatalf("tombstone at %v: %v", s.rev, err)
			}
			continue
		}
		created, ver := ti.Put(key, s.rev)
		if created != s.created || ver != s.ver {
			t.Fatalf("put at %v: created %d version %d, want %d %d", s.rev, created, ver, s.created, s.ver)
		}
		_, c, v, err := ti.Get(key, s.rev.Main)
		if err != nil || c.Main != created || v != ver {
			t.Fatalf("get at %v: created %d version %d (%v), put said %d %d", s.rev, c.Main, v, err, created, ver)
		}
	}
}
