package dashboard

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestSamplerRatesAndQuantiles(t *testing.T) {
	reg := prometheus.NewRegistry()
	puts := prometheus.NewCounter(prometheus.CounterOpts{Name: metricPut})
	ranges := prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricRange}, []string{"kind"})
	fsync := prometheus.NewHistogram(prometheus.HistogramOpts{Name: metricWALFsync, Buckets: []float64{0.001, 0.01, 0.1}})
	pending := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricPending})
	reg.MustRegister(puts, ranges, fsync, pending)

	s := newSampler(reg, 3)
	t0 := time.Unix(1000, 0)
	s.sample(t0)
	if got := s.snapshot(); len(got) != 0 {
		t.Fatalf("first sample made points %v; it is only the baseline", got)
	}
	puts.Add(20)
	ranges.WithLabelValues("a").Add(5)
	ranges.WithLabelValues("b").Add(5)
	for i := 0; i < 98; i++ {
		fsync.Observe(0.0005)
	}
	fsync.Observe(0.05)
	fsync.Observe(0.05)
	pending.Set(3)
	s.sample(t0.Add(2 * time.Second))
	p := s.snapshot()[0]
	if p.WritesPerSec != 10 || p.ReadsPerSec != 5 || p.ProposalsPending != 3 || p.Time != t0.Add(2*time.Second).UnixMilli() {
		t.Errorf("point = %+v, want 10 writes/s, 5 reads/s (both label values), 3 pending", p)
	}
	// 99 of 100 observations are at or below 0.1 but only 98 below 0.001.
	if p.WALFsyncP99 != 0.1 {
		t.Errorf("fsync p99 = %v, want the bucket bound 0.1", p.WALFsyncP99)
	}
	// The next interval has no fsync at all: its p99 is 0, not the old one.
	s.sample(t0.Add(4 * time.Second))
	if p := s.snapshot()[1]; p.WALFsyncP99 != 0 || p.WritesPerSec != 0 {
		t.Errorf("idle point = %+v, want zeros", p)
	}
	// The ring keeps the newest max points.
	s.sample(t0.Add(6 * time.Second))
	s.sample(t0.Add(8 * time.Second))
	got := s.snapshot()
	if len(got) != 3 || got[2].Time != t0.Add(8*time.Second).UnixMilli() || got[0].Time != t0.Add(4*time.Second).UnixMilli() {
		t.Errorf("ring = %+v, want the last 3 points", got)
	}
	// A clock that did not move makes no point (no division by zero).
	s.sample(t0.Add(8 * time.Second))
	if len(s.snapshot()) != 3 {
		t.Error("a sample at the same instant made a point")
	}
}
