package mvcc

import (
	"errors"
	"fmt"
	"sort"
	"unsafe"
)

// errRevisionNotFound: the key has no live revision at the asked revision.
var errRevisionNotFound = errors.New("mvcc: revision not found")

// generation is one life of a key, from the put that created it up to and
// including the tombstone that ended it. Only the newest generation of a key
// has no tombstone; it is empty while the key is deleted.
type generation struct {
	created int64      // main revision of the put that created the key in this generation
	ver     int64      // the key's version at revs[len(revs)-1]
	revs    []Revision // ascending; compaction drops old ones from the front
}

func (g *generation) isEmpty() bool { return len(g.revs) == 0 }

// lastAtOrBefore returns the index of the newest revision with Main <= atRev,
// or -1 if every revision of g is newer.
func (g *generation) lastAtOrBefore(atRev int64) int {
	return sort.Search(len(g.revs), func(i int) bool { return g.revs[i].Main > atRev }) - 1
}

// tombstone returns the revision that ended g; only valid for a generation
// that is not the newest.
func (g *generation) tombstone() Revision { return g.revs[len(g.revs)-1] }

// keyIndex holds every revision of one key that is still readable, grouped
// into generations, oldest first. For example put@2, put@3, delete@4, put@6
// gives generations {2,3,4t} {6}.
//
// The index holds one keyIndex per key of the store, so its layout is kept
// small (64 bytes): the key is a string (its bytes are never modified), the
// newest generation is stored inline and only keys that were deleted and
// re-created, or are deleted now, allocate the older ones; the newest
// revision is not stored but read from the generations (modified).
type keyIndex struct {
	key  string
	past *[]generation // the generations before cur, each ended by a tombstone; nil if none
	cur  generation    // the newest generation
}

// newKeyIndex returns an empty keyIndex for a copy of key.
func newKeyIndex(key []byte) *keyIndex { return &keyIndex{key: string(key)} }

// keyBytes views the key as bytes without copying; callers must not modify them.
func (ki *keyIndex) keyBytes() []byte { return unsafe.Slice(unsafe.StringData(ki.key), len(ki.key)) }

// numGenerations counts the generations, the newest (maybe empty) included.
func (ki *keyIndex) numGenerations() int {
	if ki.past == nil {
		return 1
	}
	return len(*ki.past) + 1
}

// generation returns the i-th generation, oldest first.
func (ki *keyIndex) generation(i int) *generation {
	if ki.past == nil || i == len(*ki.past) {
		return &ki.cur
	}
	return &(*ki.past)[i]
}

// isEmpty reports whether nothing of the key remains: compaction removes such
// a keyIndex from the tree.
func (ki *keyIndex) isEmpty() bool { return ki.past == nil && ki.cur.isEmpty() }

func (ki *keyIndex) current() *generation { return &ki.cur }

// modified is the key's newest revision, tombstones included; zero for a
// keyIndex that holds nothing yet. Only the newest generation can be empty,
// and compaction never drops the revision that ends the one before it
// without dropping the whole key.
func (ki *keyIndex) modified() Revision {
	for i := ki.numGenerations() - 1; i >= 0; i-- {
		if revs := ki.generation(i).revs; len(revs) > 0 {
			return revs[len(revs)-1]
		}
	}
	return Revision{}
}

// put records a change of the key at rev, creating the key if it is deleted.
// Revisions only grow: a smaller one means the store's bookkeeping is broken.
func (ki *keyIndex) put(rev Revision) {
	if last := ki.modified(); !rev.GreaterThan(last) {
		panic(fmt.Sprintf("mvcc: put of key %q at revision %v not after %v", ki.key, rev, last))
	}
	g := ki.current()
	if g.isEmpty() {
		// Only the main revision: it is all a stored KeyValue records
		// (CreateRevision), so an index rebuilt from the backend agrees.
		g.created = rev.Main
	}
	g.revs = append(g.revs, rev)
	g.ver++
}

// tombstone ends the current generation with a deletion at rev and opens an
// empty one. It fails if the key is already deleted.
func (ki *keyIndex) tombstone(rev Revision) error {
	if ki.current().isEmpty() {
		return errRevisionNotFound
	}
	ki.put(rev)
	ki.endGeneration()
	return nil
}

// endGeneration moves the newest generation to the past and opens an empty one.
func (ki *keyIndex) endGeneration() {
	if ki.past == nil {
		ki.past = &[]generation{}
	}
	*ki.past = append(*ki.past, ki.cur)
	ki.cur = generation{}
}

// restore seeds an empty keyIndex with the newest surviving revision of a
// compacted key, whose older revisions are gone from the backend.
func (ki *keyIndex) restore(created int64, modified Revision, ver int64) {
	ki.past = nil
	ki.cur = generation{created: created, ver: ver, revs: []Revision{modified}}
}

// restoreTombstone seeds an empty keyIndex whose only surviving revision is a
// tombstone (kept because a compaction happened exactly at it). The creation
// revision is unknown then, as in etcd.
func (ki *keyIndex) restoreTombstone(rev Revision) {
	ki.restore(0, rev, 1)
	ki.endGeneration()
}

// get returns the revision of the key visible at atRev, the revision that
// created it and its version then.
func (ki *keyIndex) get(atRev int64) (modified, created Revision, ver int64, err error) {
	g := ki.findGeneration(atRev)
	if g == nil {
		return Revision{}, Revision{}, 0, errRevisionNotFound
	}
	n := g.lastAtOrBefore(atRev)
	if n < 0 {
		return Revision{}, Revision{}, 0, errRevisionNotFound
	}
	// ver counts the newest revision; step back one version per newer revision.
	return g.revs[n], Revision{Main: g.created}, g.ver - int64(len(g.revs)-1-n), nil
}

// findGeneration returns the generation alive at atRev, or nil if the key did
// not exist then (before its creation or between a tombstone and a re-create).
func (ki *keyIndex) findGeneration(atRev int64) *generation {
	newest := ki.numGenerations() - 1
	for i := newest; i >= 0; i-- {
		g := ki.generation(i)
		if g.isEmpty() {
			continue
		}
		if i != newest && g.tombstone().Main <= atRev {
			return nil // deleted at or before atRev and not re-created by then
		}
		if g.revs[0].Main <= atRev {
			return g
		}
	}
	return nil
}

// firstKeptGeneration returns the first generation a compaction at atRev
// keeps: the first one still alive at atRev (its tombstone is at or after
// atRev), or else the newest one.
func (ki *keyIndex) firstKeptGeneration(atRev int64) int {
	gi, newest := 0, ki.numGenerations()-1
	for gi < newest && ki.generation(gi).tombstone().Main < atRev {
		gi++
	}
	return gi
}

// visitCompactionPoints calls f, from generation `first` on, for every
// generation with revisions at or before atRev, with the position of the
// newest of them: the revision a compaction at atRev keeps. Normally that is
// one generation; a transaction that deletes and re-creates the key at
// exactly atRev leaves a revision at atRev in the next generation too.
func (ki *keyIndex) visitCompactionPoints(first int, atRev int64, f func(g *generation, gi, n int)) {
	for gi := first; gi < ki.numGenerations(); gi++ {
		g := ki.generation(gi)
		n := g.lastAtOrBefore(atRev)
		if n < 0 {
			return
		}
		f(g, gi, n)
	}
}

// compact drops every revision that no read at atRev or later can see and
// adds the revisions it keeps at or before atRev to keep. A tombstone exactly
// at atRev is kept (as etcd > 3.5.15 does) so that watchers resuming from
// atRev still see the deletion.
func (ki *keyIndex) compact(atRev int64, keep *revisionSet) {
	first := ki.firstKeptGeneration(atRev)
	ki.visitCompactionPoints(first, atRev, func(g *generation, _, n int) {
		keep.add(g.revs[n])
		g.revs = g.revs[n:]
	})
	ki.dropGenerations(first)
}

// dropGenerations forgets the n oldest generations; the newest always stays.
func (ki *keyIndex) dropGenerations(n int) {
	if n == 0 {
		return
	}
	if rest := (*ki.past)[n:]; len(rest) > 0 {
		*ki.past = rest
	} else {
		ki.past = nil
	}
}

// keep adds to available the revisions a compaction at atRev would keep, but
// without a tombstone exactly at atRev: older etcd versions deleted it and
// HashKV must agree across versions.
func (ki *keyIndex) keep(atRev int64, available *revisionSet) {
	if ki.isEmpty() {
		return
	}
	newest := ki.numGenerations() - 1
	ki.visitCompactionPoints(ki.firstKeptGeneration(atRev), atRev, func(g *generation, gi, n int) {
		if gi != newest && n == len(g.revs)-1 {
			return // the generation's tombstone, at exactly atRev
		}
		available.add(g.revs[n])
	})
}

// since returns the key's revisions with Main >= rev, at most one per main
// revision (the highest sub), for watchers catching up.
func (ki *keyIndex) since(rev int64) []Revision {
	var revs []Revision
	for gi := range ki.numGenerations() {
		for _, r := range ki.generation(gi).revs {
			if r.Main < rev {
				continue
			}
			if n := len(revs); n > 0 && revs[n-1].Main == r.Main {
				revs[n-1] = r
				continue
			}
			revs = append(revs, r)
		}
	}
	return revs
}
