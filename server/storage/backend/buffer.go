package backend

import (
	"bytes"
	"slices"
)

// bufferedWrite is one put or delete that the batch has released but not yet
// committed. A delete is kept as a tombstone so that it hides the committed
// pair underneath it until the next commit.
type bufferedWrite struct {
	key     []byte
	value   []byte
	deleted bool
}

// run is a sorted slice of writes with distinct keys. It is never modified
// once built, so readers use it without locks while the batch goes on.
type run []bufferedWrite

// bucketRuns are the released writes of one bucket, oldest run first. Each
// run is less than half the size of the one before it, as in a binary
// counter, so a bucket has O(log n) runs and each write is copied O(log n)
// times: publishing never copies the whole buffer.
type bucketRuns []run

// releasedWrites holds the runs of each bucket with released writes. A
// published value is never modified; Unlock publishes a new one. It is a
// slice, not a map: a member has about ten buckets, and copying a short
// slice on every Unlock costs one allocation where a map costs several.
type releasedWrites []bucketWrites

// bucketWrites are the runs of one bucket.
type bucketWrites struct {
	name string
	runs bucketRuns
}

// of returns the runs of bucket, nil if it has none.
func (rw releasedWrites) of(bucket []byte) bucketRuns {
	for i := range rw {
		if rw[i].name == string(bucket) {
			return rw[i].runs
		}
	}
	return nil
}

// pendingWrite is a write made under the batch lock that readers must not see
// before Unlock.
type pendingWrite struct {
	bucket []byte
	write  bufferedWrite
}

// withWrites returns prev plus ws, sharing every run it does not change
// (see sortedRuns for the order ws is left in).
func (prev releasedWrites) withWrites(ws []pendingWrite) releasedWrites {
	return prev.withRuns(sortedRuns(ws))
}

// newBucketRun is the run one Unlock adds to one bucket.
type newBucketRun struct {
	bucket []byte
	run    run
}

// sortedRuns turns ws into one run per bucket. It sorts ws in place (by
// bucket, then key, keeping the order of writes to one key) so that every
// run is a slice of one array: an Unlock costs a few allocations however
// many buckets it touches. The runs are immutable, so the readers' overlay
// and the overlay of writes since a commit's cut can share them.
func sortedRuns(ws []pendingWrite) []newBucketRun {
	slices.SortStableFunc(ws, func(a, b pendingWrite) int {
		if c := bytes.Compare(a.bucket, b.bucket); c != 0 {
			return c
		}
		return bytes.Compare(a.write.key, b.write.key)
	})
	writes := make([]bufferedWrite, len(ws))
	for i, w := range ws {
		writes[i] = w.write
	}
	var out []newBucketRun
	for start := 0; start < len(ws); {
		end := start + 1
		for end < len(ws) && bytes.Equal(ws[end].bucket, ws[start].bucket) {
			end++
		}
		out = append(out, newBucketRun{bucket: ws[start].bucket, run: lastPerKey(writes[start:end:end])})
		start = end
	}
	return out
}

// withRuns returns prev plus the runs, sharing every run it does not change.
func (prev releasedWrites) withRuns(rs []newBucketRun) releasedWrites {
	next := make(releasedWrites, len(prev), len(prev)+1)
	copy(next, prev)
	for _, r := range rs {
		next = next.with(r.bucket, r.run)
	}
	return next
}

// heldRun is the newest write of each key of bucket among ws (writes not
// released yet), as a run; ws is not modified.
func heldRun(ws []pendingWrite, bucket []byte) run {
	var mine []bufferedWrite
	for _, w := range ws {
		if bytes.Equal(w.bucket, bucket) {
			mine = append(mine, w.write)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	slices.SortStableFunc(mine, func(a, b bufferedWrite) int { return bytes.Compare(a.key, b.key) })
	return lastPerKey(mine)
}

// size is how many writes rw holds and how many bytes of keys and values:
// what a commit of rw writes at most.
func (rw releasedWrites) size() (writes, bytes int64) {
	for _, bw := range rw {
		for _, r := range bw.runs {
			writes += int64(len(r))
			for _, w := range r {
				bytes += int64(len(w.key) + len(w.value))
			}
		}
	}
	return writes, bytes
}

// with adds newest to the runs of bucket, in place: rw is a fresh copy.
func (rw releasedWrites) with(bucket []byte, newest run) releasedWrites {
	for i := range rw {
		if rw[i].name == string(bucket) {
			rw[i].runs = rw[i].runs.add(newest)
			return rw
		}
	}
	return append(rw, bucketWrites{name: string(bucket), runs: bucketRuns(nil).add(newest)})
}

// lastPerKey keeps the last write of each key of writes, sorted by key, in
// place.
func lastPerKey(writes []bufferedWrite) run {
	out := run(writes[:0])
	for _, w := range writes {
		if n := len(out); n > 0 && bytes.Equal(out[n-1].key, w.key) {
			out[n-1] = w
			continue
		}
		out = append(out, w)
	}
	return out
}

// add returns runs with newest appended, merging runs from the newest end
// while the newer is not smaller than half the older. runs is not modified.
func (runs bucketRuns) add(newest run) bucketRuns {
	next := make(bucketRuns, len(runs), len(runs)+1)
	copy(next, runs)
	for n := len(next); n > 0 && 2*len(newest) >= len(next[n-1]); n = len(next) {
		newest = mergeRuns(next[n-1], newest)
		next = next[:n-1]
	}
	return append(next, newest)
}

// mergeRuns merges two runs; on equal keys the newer write wins.
func mergeRuns(older, newer run) run {
	out := make(run, 0, len(older)+len(newer))
	i, j := 0, 0
	for i < len(older) && j < len(newer) {
		switch c := bytes.Compare(older[i].key, newer[j].key); {
		case c < 0:
			out = append(out, older[i])
			i++
		case c > 0:
			out = append(out, newer[j])
			j++
		default:
			out = append(out, newer[j])
			i++
			j++
		}
	}
	out = append(out, older[i:]...)
	return append(out, newer[j:]...)
}

// lowerBound is the index of the first write with key >= key.
func (r run) lowerBound(key []byte) int {
	i, _ := slices.BinarySearchFunc(r, key, func(w bufferedWrite, k []byte) int { return bytes.Compare(w.key, k) })
	return i
}

// get returns the newest write of key.
func (runs bucketRuns) get(key []byte) (bufferedWrite, bool) {
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		if j := r.lowerBound(key); j < len(r) && bytes.Equal(r[j].key, key) {
			return r[j], true
		}
	}
	return bufferedWrite{}, false
}

// runsIter yields the newest write of each key in [from, end) (end nil =
// unbounded) across all runs, in key order.
type runsIter struct {
	runs bucketRuns
	pos  []int
	end  []byte
}

func newRunsIter(runs bucketRuns, from, end []byte) *runsIter {
	it := &runsIter{runs: runs, pos: make([]int, len(runs)), end: end}
	for i, r := range runs {
		it.pos[i] = r.lowerBound(from)
	}
	return it
}

func (it *runsIter) next() (bufferedWrite, bool) {
	best := -1
	// Newest run first, and only a strictly smaller key replaces the best,
	// so on equal keys the newest write is the one returned.
	for i := len(it.runs) - 1; i >= 0; i-- {
		if it.pos[i] >= len(it.runs[i]) {
			continue
		}
		k := it.runs[i][it.pos[i]].key
		if it.end != nil && bytes.Compare(k, it.end) >= 0 {
			continue
		}
		if best < 0 || bytes.Compare(k, it.runs[best][it.pos[best]].key) < 0 {
			best = i
		}
	}
	if best < 0 {
		return bufferedWrite{}, false
	}
	w := it.runs[best][it.pos[best]]
	for i, r := range it.runs {
		if it.pos[i] < len(r) && bytes.Equal(r[it.pos[i]].key, w.key) {
			it.pos[i]++
		}
	}
	return w, true
}
