package mvcc

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"
)

// benchIndexKeys is the key count of the index benchmarks: the size of the
// big-store benchmark (make bench-big).
const benchIndexKeys = 1_000_000

// benchKey is the i-th key: 16 bytes, as the big-store benchmark writes.
func benchKey(i int) []byte { return fmt.Appendf(nil, "key/%012d", i) }

// buildBenchIndex puts every key `versions` times, one revision per put, as
// a sequential load does, and returns the index and its last revision.
func buildBenchIndex(versions int) (*treeIndex, int64) {
	ti := newTreeIndex()
	rev := int64(1)
	for range versions {
		for i := range benchIndexKeys {
			rev++
			ti.Put(benchKey(i), Revision{Main: rev})
		}
	}
	return ti, rev
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkIndexMemory reports the live heap per key of an index holding
// 1M keys with one and with two revisions each.
func BenchmarkIndexMemory(b *testing.B) {
	for _, versions := range []int{1, 2} {
		b.Run(fmt.Sprintf("versions=%d", versions), func(b *testing.B) {
			for range b.N {
				before := heapInUse()
				ti, _ := buildBenchIndex(versions)
				after := heapInUse()
				b.ReportMetric(float64(after-before)/benchIndexKeys, "heap-B/key")
				runtime.KeepAlive(ti)
			}
		})
	}
}

// BenchmarkIndexPut adds a revision to a random existing key of a 1M-key index.
func BenchmarkIndexPut(b *testing.B) {
	ti, rev := buildBenchIndex(2)
	rnd := rand.New(rand.NewSource(1))
	keys := make([][]byte, 4096)
	for i := range keys {
		keys[i] = benchKey(rnd.Intn(benchIndexKeys))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		rev++
		ti.Put(keys[i%len(keys)], Revision{Main: rev})
	}
}

// BenchmarkIndexRange reads the revisions of 1000 consecutive keys of a
// 1M-key index, at the head and at an older revision.
func BenchmarkIndexRange(b *testing.B) {
	ti, rev := buildBenchIndex(2)
	for _, tc := range []struct {
		name  string
		atRev int64
	}{{"head", rev}, {"first-version", benchIndexKeys + 1}} {
		b.Run(tc.name, func(b *testing.B) {
			rnd := rand.New(rand.NewSource(1))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				start := rnd.Intn(benchIndexKeys - 1000)
				revs, _ := ti.Revisions(benchKey(start), benchKey(start+1000), tc.atRev, 0)
				if len(revs) != 1000 {
					b.Fatalf("%d revisions", len(revs))
				}
			}
		})
	}
}

// BenchmarkIndexSince lists the revisions after the first version of 1000
// consecutive keys, as a watcher catching up does.
func BenchmarkIndexSince(b *testing.B) {
	ti, _ := buildBenchIndex(2)
	rnd := rand.New(rand.NewSource(1))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := rnd.Intn(benchIndexKeys - 1000)
		if revs := ti.Since(benchKey(start), benchKey(start+1000), benchIndexKeys+2); len(revs) != 1000 {
			b.Fatalf("%d revisions", len(revs))
		}
	}
}

// BenchmarkIndexCompact compacts a 1M-key, two-version index at the end of
// the first version: every key drops one revision.
func BenchmarkIndexCompact(b *testing.B) {
	for range b.N {
		b.StopTimer()
		ti, _ := buildBenchIndex(2)
		b.StartTimer()
		if keep := ti.Compact(benchIndexKeys + 1); keep.len() != benchIndexKeys {
			b.Fatalf("kept %d revisions at the compaction point", keep.len())
		}
	}
}
