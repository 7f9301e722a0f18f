// Package stats owns the arithmetic of the benchmark tool: it records the
// outcome of every request and turns the records into a Report (summary
// numbers, a latency histogram, latency percentiles and error counts).
//
// It is kept apart from the load generator, with no network code, so that
// its numbers can be checked by unit tests against hand-computed answers.
//
// What is exact and what may be sampled:
//   - counts, fastest, slowest, average and standard deviation are always
//     computed over every successful request (streaming, O(1) memory);
//   - percentiles and the histogram are computed from the kept latencies.
//     Every latency is kept unless the Recorder was given a sample limit, in
//     which case a uniform reservoir sample of that size is kept and the
//     Report says so.
package stats

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Unlimited is the sample limit that keeps every latency.
const Unlimited = 0

// Recorder accumulates request outcomes. It is safe for concurrent use; a
// worker calls Record after its clock has stopped, so the lock is never
// inside a measured interval.
type Recorder struct {
	mu sync.Mutex

	sampleLimit int
	rng         *rand.Rand

	ok      int64
	errs    map[string]int64
	nErrs   int64
	fastest time.Duration
	slowest time.Duration
	// mean and m2 follow Welford's algorithm, in seconds, which stays
	// numerically stable for millions of samples.
	mean float64
	m2   float64

	kept []time.Duration
}

// NewRecorder returns a Recorder that keeps at most sampleLimit latencies for
// percentiles and the histogram (Unlimited keeps all of them). The reservoir
// uses a fixed seed so that a run's sampling is reproducible.
func NewRecorder(sampleLimit int) *Recorder {
	if sampleLimit < 0 {
		sampleLimit = Unlimited
	}
	return &Recorder{
		sampleLimit: sampleLimit,
		rng:         rand.New(rand.NewPCG(1, 2)),
		errs:        make(map[string]int64),
	}
}

// Record notes one finished request: its latency and, if it failed, its
// error. Failed requests are counted by message but kept out of the latency
// statistics, because a fast failure would otherwise flatter the latencies.
func (r *Recorder) Record(latency time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.nErrs++
		r.errs[err.Error()]++
		return
	}
	r.recordSuccess(latency)
}

// RecordSuccesses notes a batch of successful latencies under one lock. A
// watch receiver uses it so that thousands of events per second do not each
// contend for the lock; the result is the same as calling Record(lat, nil)
// for each latency in order.
func (r *Recorder) RecordSuccesses(latencies []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, lat := range latencies {
		r.recordSuccess(lat)
	}
}

func (r *Recorder) recordSuccess(latency time.Duration) {
	r.ok++
	if r.ok == 1 || latency < r.fastest {
		r.fastest = latency
	}
	if latency > r.slowest {
		r.slowest = latency
	}
	secs := latency.Seconds()
	delta := secs - r.mean
	r.mean += delta / float64(r.ok)
	r.m2 += delta * (secs - r.mean)
	r.keep(latency)
}

// keep adds latency to the kept set, using reservoir sampling (Algorithm R)
// once the limit is reached so that every success has equal odds of being
// represented.
func (r *Recorder) keep(latency time.Duration) {
	if r.sampleLimit == Unlimited || len(r.kept) < r.sampleLimit {
		r.kept = append(r.kept, latency)
		return
	}
	if slot := r.rng.Int64N(r.ok); slot < int64(r.sampleLimit) {
		r.kept[slot] = latency
	}
}

// Count returns how many requests have been recorded so far, succeeded or
// failed. A progress bar polls it.
func (r *Recorder) Count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok + r.nErrs
}

// Report summarises everything recorded so far. planned is the number of
// requests the run intended to send and elapsed its wall-clock duration;
// requests neither succeeded nor failed are reported as not sent.
func (r *Recorder) Report(planned int64, elapsed time.Duration, opts ReportOptions) *Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := &Report{
		Planned:    planned,
		Succeeded:  r.ok,
		Failed:     r.nErrs,
		NotSent:    max(planned-r.ok-r.nErrs, 0),
		Elapsed:    elapsed,
		Errors:     sortedErrors(r.errs),
		SampleSize: len(r.kept),
		Sampled:    int64(len(r.kept)) < r.ok,
		Unit:       opts.unit(),
		NotDone:    opts.notDone(),
	}
	if elapsed > 0 {
		rep.RequestsPerSec = float64(r.ok) / elapsed.Seconds()
	}
	if r.ok == 0 {
		return rep
	}
	rep.Fastest = r.fastest
	rep.Slowest = r.slowest
	rep.Average = secondsToDuration(r.mean)
	rep.Stddev = secondsToDuration(math.Sqrt(r.m2 / float64(r.ok)))
	sorted := sortedCopy(r.kept)
	rep.Percentiles = Percentiles(sorted, opts.percentiles())
	rep.Histogram = Histogram(sorted, opts.buckets())
	return rep
}

func secondsToDuration(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}
