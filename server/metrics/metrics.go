// Package metrics defines the Prometheus metrics a member exports, under
// etcd's names, labels and bucket layouts, so that dashboards and alerts
// written for etcd work unchanged against cairn. Everything registers on the
// default registry at init; server/httpapi serves it at /metrics.
//
// The hooks are cheap on purpose: counters, gauges and histograms resolved
// once, updated with atomic operations on the hot path. Values that are
// expensive to track continuously (key count, db size, revisions) are read
// at scrape time through a Source the member installs.
package metrics

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Source reports store figures that are read only when scraped. The member
// installs one with SetSource; methods must be safe to call at any time.
type Source interface {
	// DBSize and DBSizeInUse are the backend file's size and the part of it
	// not on the free list, in bytes.
	DBSize() int64
	DBSizeInUse() int64
	// Rev and CompactRev are the store's current and compacted revisions.
	Rev() int64
	CompactRev() int64
	// Keys is how many keys the store's index holds.
	Keys() int
	// WatchBacklog reports the watchers behind the store's revision and
	// the events held for watchers whose channel was full.
	WatchBacklog() (slowWatchers, pendingEvents int)
	// ClusterVersion is the cluster version ("3.7.0"), "" until decided.
	ClusterVersion() string
	// AuthRevision is the auth store's revision.
	AuthRevision() uint64
}

type sourceBox struct{ s Source }

var source atomic.Pointer[sourceBox]

// SetSource makes scrapes read s (nil detaches). With several members in
// one process the last one installed wins.
func SetSource(s Source) {
	if s == nil {
		source.Store(nil)
		return
	}
	source.Store(&sourceBox{s: s})
}

func fromSource(f func(Source) float64) func() float64 {
	return func() float64 {
		if b := source.Load(); b != nil {
			return f(b.s)
		}
		return 0
	}
}

func init() {
	goVersion.WithLabelValues(runtime.Version()).Set(1)
}

// SetServerVersion records the etcd version the server reports.
func SetServerVersion(v string) {
	serverVersion.Reset()
	serverVersion.WithLabelValues(v).Set(1)
}

// SetServerID records this member's ID.
func SetServerID(id uint64) {
	serverID.Reset()
	serverID.WithLabelValues(strconv.FormatUint(id, 16)).Set(1)
}

// ID formats a member ID as the label value etcd uses.
func ID(id uint64) string { return strconv.FormatUint(id, 16) }

// ObserveWatchSend records the forwarding of one store response with
// events events.
func ObserveWatchSend(took time.Duration, events int) {
	WatchSendStreamSeconds.Observe(took.Seconds())
	if events > 0 {
		WatchSendStreamPerEventSeconds.Observe(took.Seconds() / float64(events))
	}
}

// SetLeader records the leader this member now knows of (0 for none); self is
// this member's ID. changed says whether lead differs from the previous
// leader. A change to a known leader counts as a leader change, as in etcd.
func SetLeader(lead, self uint64, changed bool) {
	if lead == 0 {
		HasLeader.Set(0)
	} else {
		HasLeader.Set(1)
		if changed {
			LeaderChanges.Inc()
		}
	}
	if lead != 0 && lead == self {
		IsLeader.Set(1)
	} else {
		IsLeader.Set(0)
	}
}

// SetLearner records whether this member is a learner.
func SetLearner(learner bool) {
	if learner {
		IsLearner.Set(1)
	} else {
		IsLearner.Set(0)
	}
}

// The constructors below declare a family in one line: namespace,
// subsystem and name (etcd's, which dashboards and alerts match), help,
// then buckets for histograms and label names for vectors. Each registers
// the family on the default registry as it creates it, so that a family is
// named once, where it is declared.

func counter(ns, sub, name, help string) prometheus.Counter {
	return register(prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}))
}

func counterVec(ns, sub, name, help string, labels ...string) *prometheus.CounterVec {
	return register(prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels))
}

func gauge(ns, sub, name, help string) prometheus.Gauge {
	return register(prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}))
}

func gaugeVec(ns, sub, name, help string, labels ...string) *prometheus.GaugeVec {
	return register(prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels))
}

// sourceGauge is a gauge computed at scrape time by read from the Source
// (0 while no Source is installed).
func sourceGauge(ns, sub, name, help string, read func(Source) float64) prometheus.GaugeFunc {
	return register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, fromSource(read)))
}

func histogram(ns, sub, name, help string, buckets []float64) prometheus.Histogram {
	return register(prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help, Buckets: buckets}))
}

func histogramVec(ns, sub, name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return register(prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help, Buckets: buckets}, labels))
}

func register[C prometheus.Collector](c C) C {
	prometheus.MustRegister(c)
	return c
}
