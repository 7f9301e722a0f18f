package mvcc

import "slices"

// revisionSet is the set of revisions a compaction keeps (or a hash at a
// compacted revision counts). It is filled in key order by the index walk,
// sealed once, and then asked about the key bucket's revisions in ascending
// order, so membership is a walk along a sorted slice: a million kept
// revisions cost 16 MB and one sort instead of a hash map's ~40 MB of
// growing tables and a hash probe per entry read, the allocations that made
// the collector run during a big compaction.
type revisionSet struct {
	revs   []Revision
	sealed bool
	at     int // where the previous answer was found; the next query starts here
}

// newRevisionSet returns an empty set with room for capacity revisions
// (growing a large slice step by step allocates about five times its
// final size).
func newRevisionSet(capacity int) *revisionSet {
	return &revisionSet{revs: make([]Revision, 0, capacity)}
}

// add records r; only before seal.
func (s *revisionSet) add(r Revision) {
	if s.sealed {
		panic("mvcc: revisionSet.add after seal")
	}
	s.revs = append(s.revs, r)
}

// seal sorts the set; has may be asked from then on.
func (s *revisionSet) seal() *revisionSet {
	slices.SortFunc(s.revs, compareRevisions)
	s.sealed, s.at = true, 0
	return s
}

// len is how many revisions the set holds.
func (s *revisionSet) len() int { return len(s.revs) }

// has reports whether r is in the set. Queries in ascending order cost O(1)
// each on average; a smaller revision than the previous query's falls back
// to a binary search, so any order is answered correctly.
func (s *revisionSet) has(r Revision) bool {
	if !s.sealed {
		panic("mvcc: revisionSet.has before seal")
	}
	if s.at > 0 && compareRevisions(s.revs[s.at-1], r) >= 0 {
		s.at, _ = slices.BinarySearchFunc(s.revs, r, compareRevisions)
	}
	for s.at < len(s.revs) && compareRevisions(s.revs[s.at], r) < 0 {
		s.at++
	}
	return s.at < len(s.revs) && s.revs[s.at] == r
}
