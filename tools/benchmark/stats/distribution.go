package stats

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"
)

// DefaultPercentiles are the latency percentiles a Report lists by default.
var DefaultPercentiles = []float64{10, 25, 50, 75, 90, 95, 99, 99.9}

// DefaultBuckets is the number of histogram buckets a Report uses by default.
const DefaultBuckets = 10

// Percentile is the latency at or below which P percent of requests finished.
type Percentile struct {
	P       float64
	Latency time.Duration
}

// Bucket counts the latencies in (previous bucket's Upper, Upper]; the first
// bucket also holds latencies equal to the fastest.
type Bucket struct {
	Upper time.Duration
	Count int64
}

// ErrorCount is how many requests failed with one error message.
type ErrorCount struct {
	Message string
	Count   int64
}

// Percentiles computes nearest-rank percentiles of sorted (ascending): the
// p-th percentile is the smallest latency such that at least p percent of
// the latencies are less than or equal to it. Nearest-rank never invents a
// value that was not observed, which keeps the tail honest.
func Percentiles(sorted []time.Duration, ps []float64) []Percentile {
	if len(sorted) == 0 {
		return nil
	}
	out := make([]Percentile, 0, len(ps))
	for _, p := range ps {
		out = append(out, Percentile{P: p, Latency: sorted[nearestRank(p, len(sorted))]})
	}
	return out
}

// nearestRank returns the zero-based index of the p-th percentile among n
// sorted values, clamped to the valid range.
func nearestRank(p float64, n int) int {
	// Rounding first absorbs float noise such as 99.9/100*1000 = 999.0000001,
	// which would otherwise push ceil one rank too far.
	rank := int(math.Ceil(math.Round(p/100*float64(n)*1e6) / 1e6))
	return min(max(rank-1, 0), n-1)
}

// Histogram splits the range [fastest, slowest] of sorted (ascending) into n
// equal-width buckets and counts the latencies in each. If all latencies are
// equal there is a single bucket.
func Histogram(sorted []time.Duration, n int) []Bucket {
	if len(sorted) == 0 || n < 1 {
		return nil
	}
	lo, hi := sorted[0], sorted[len(sorted)-1]
	if lo == hi {
		return []Bucket{{Upper: hi, Count: int64(len(sorted))}}
	}
	buckets := make([]Bucket, n)
	width := float64(hi-lo) / float64(n)
	for i := range buckets {
		buckets[i].Upper = lo + time.Duration(math.Round(width*float64(i+1)))
	}
	// Rounding must not let the last edge fall short of the slowest sample.
	buckets[n-1].Upper = hi
	b := 0
	for _, lat := range sorted {
		for lat > buckets[b].Upper {
			b++
		}
		buckets[b].Count++
	}
	return buckets
}

// sortedErrors lists error counts, most frequent first, ties by message so
// output is deterministic.
func sortedErrors(errs map[string]int64) []ErrorCount {
	out := make([]ErrorCount, 0, len(errs))
	for _, msg := range slices.Sorted(maps.Keys(errs)) {
		out = append(out, ErrorCount{Message: msg, Count: errs[msg]})
	}
	slices.SortStableFunc(out, func(a, b ErrorCount) int { return cmp.Compare(b.Count, a.Count) })
	return out
}

func sortedCopy(lats []time.Duration) []time.Duration {
	out := slices.Clone(lats)
	slices.Sort(out)
	return out
}
