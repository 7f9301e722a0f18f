package dashboard

import (
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// historyWindow is how far back the graphs reach.
const historyWindow = 10 * time.Minute

// The metric families the graphs are drawn from, under etcd's names.
const (
	metricPut           = "etcd_mvcc_put_total"
	metricDelete        = "etcd_mvcc_delete_total"
	metricTxn           = "etcd_mvcc_txn_total"
	metricRange         = "etcd_mvcc_range_total"
	metricWatchEvents   = "etcd_debugging_mvcc_events_total"
	metricWALFsync      = "etcd_disk_wal_fsync_duration_seconds"
	metricCommit        = "etcd_disk_backend_commit_duration_seconds"
	metricPending       = "etcd_server_proposals_pending"
	metricFailed        = "etcd_server_proposals_failed_total"
	metricDBSize        = "etcd_mvcc_db_total_size_in_bytes"
	metricLeaderChanges = "etcd_server_leader_changes_seen_total"
)

// point is one sample of the graphs: rates and p99s over the interval
// since the previous sample, gauges and totals as read.
type point struct {
	Time              int64   `json:"t"` // Unix milliseconds
	WritesPerSec      float64 `json:"writesPerSec"`
	ReadsPerSec       float64 `json:"readsPerSec"`
	WatchEventsPerSec float64 `json:"watchEventsPerSec"`
	WALFsyncP99       float64 `json:"walFsyncP99"`      // seconds; 0 without fsyncs in the interval
	BackendCommitP99  float64 `json:"backendCommitP99"` // seconds
	ProposalsPending  float64 `json:"proposalsPending"`
	ProposalsFailed   float64 `json:"proposalsFailed"` // total
	DBSize            float64 `json:"dbSize"`
	LeaderChanges     float64 `json:"leaderChanges"` // total
}

// reading is what one gather returned, kept to difference the next one.
type reading struct {
	at                    time.Time
	writes, reads, events float64
	fsync, commit         *dto.Histogram
	pending, failed, db   float64
	leaderChanges         float64
}

// sampler keeps the last points in a ring.
type sampler struct {
	g   prometheus.Gatherer
	max int

	mu     sync.Mutex
	last   *reading
	points []point
}

func newSampler(g prometheus.Gatherer, max time.Duration) *sampler {
	n := int(max)
	if n < 2 {
		n = 2
	}
	return &sampler{g: g, max: n}
}

// sample gathers the metrics at now and appends a point; the first
// sample only sets the baseline of the rates.
func (s *sampler) sample(now time.Time) {
	families, err := s.g.Gather()
	if err != nil && len(families) == 0 {
		return
	}
	cur := readMetrics(families, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil && now.After(s.last.at) {
		s.points = append(s.points, derive(s.last, cur))
		if len(s.points) > s.max {
			s.points = append(s.points[:0:0], s.points[len(s.points)-s.max:]...)
		}
	}
	s.last = cur
}

func (s *sampler) snapshot() []point {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]point{}, s.points...)
}

func readMetrics(families []*dto.MetricFamily, now time.Time) *reading {
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	sum := func(names ...string) float64 {
		var t float64
		for _, n := range names {
			t += sumValues(byName[n])
		}
		return t
	}
	return &reading{
		at:     now,
		writes: sum(metricPut, metricDelete, metricTxn), reads: sum(metricRange), events: sum(metricWatchEvents),
		fsync: mergedHistogram(byName[metricWALFsync]), commit: mergedHistogram(byName[metricCommit]),
		pending: sum(metricPending), failed: sum(metricFailed), db: sum(metricDBSize),
		leaderChanges: sum(metricLeaderChanges),
	}
}

// sumValues adds the counter or gauge values of every series of f.
func sumValues(f *dto.MetricFamily) float64 {
	var t float64
	for _, m := range f.GetMetric() {
		switch {
		case m.Counter != nil:
			t += m.Counter.GetValue()
		case m.Gauge != nil:
			t += m.Gauge.GetValue()
		case m.Untyped != nil:
			t += m.Untyped.GetValue()
		}
	}
	return t
}

// mergedHistogram adds the series of a histogram family bucket by bucket
// (they share their bounds); nil when there is none.
func mergedHistogram(f *dto.MetricFamily) *dto.Histogram {
	var out *dto.Histogram
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		if out == nil {
			out = &dto.Histogram{SampleCount: new(uint64)}
			for _, b := range h.GetBucket() {
				out.Bucket = append(out.Bucket, &dto.Bucket{UpperBound: b.UpperBound, CumulativeCount: new(uint64)})
			}
		}
		*out.SampleCount += h.GetSampleCount()
		for i, b := range h.GetBucket() {
			if i < len(out.Bucket) {
				*out.Bucket[i].CumulativeCount += b.GetCumulativeCount()
			}
		}
	}
	return out
}

func derive(prev, cur *reading) point {
	dt := cur.at.Sub(prev.at).Seconds()
	rate := func(a, b float64) float64 { return math.Max(0, b-a) / dt }
	return point{
		Time:              cur.at.UnixMilli(),
		WritesPerSec:      rate(prev.writes, cur.writes),
		ReadsPerSec:       rate(prev.reads, cur.reads),
		WatchEventsPerSec: rate(prev.events, cur.events),
		WALFsyncP99:       quantileBetween(prev.fsync, cur.fsync, 0.99),
		BackendCommitP99:  quantileBetween(prev.commit, cur.commit, 0.99),
		ProposalsPending:  cur.pending,
		ProposalsFailed:   cur.failed,
		DBSize:            cur.db,
		LeaderChanges:     cur.leaderChanges,
	}
}

// quantileBetween estimates quantile q of the observations made between
// two readings of a histogram: the upper bound of the bucket where the
// q-th observation falls (Prometheus' histogram_quantile interpolates
// inside it; the bound is the honest upper limit). 0 when nothing was
// observed.
func quantileBetween(prev, cur *dto.Histogram, q float64) float64 {
	if cur == nil {
		return 0
	}
	count := func(h *dto.Histogram, i int) uint64 {
		if h == nil || i >= len(h.Bucket) {
			return 0
		}
		return h.Bucket[i].GetCumulativeCount()
	}
	var total uint64
	if prev != nil {
		total = cur.GetSampleCount() - prev.GetSampleCount()
	} else {
		total = cur.GetSampleCount()
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	for i, b := range cur.Bucket {
		if count(cur, i)-count(prev, i) >= rank {
			return b.GetUpperBound()
		}
	}
	// Beyond the last bound: report the last bound, the most we know.
	if n := len(cur.Bucket); n > 0 {
		return cur.Bucket[n-1].GetUpperBound()
	}
	return 0
}

// serveMetrics answers with the last ten minutes of points. Like /metrics
// it needs no token: it shows nothing /metrics does not.
func (d *Dashboard) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if !allowMethods(w, r, http.MethodGet) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"intervalMs": d.cfg.SampleInterval.Milliseconds(),
		"points":     d.samples.snapshot(),
	})
}
