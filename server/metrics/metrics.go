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

	"github.com/prometheus/client_golang/prometheus"
)

// Bucket layouts, as etcd's.
var (
	// diskBuckets: 1ms doubling to about 8s (WAL fsync, backend commit).
	diskBuckets = prometheus.ExponentialBuckets(0.001, 2, 14)
	// grpcBuckets: the gRPC handling-time histogram's (Prometheus defaults).
	grpcBuckets = prometheus.DefBuckets
)

// Raft and proposals.
var (
	HasLeader = gauge("etcd", "server", "has_leader",
		"1 while this member knows of a leader, 0 while it does not.")
	IsLeader = gauge("etcd", "server", "is_leader",
		"1 while this member is the leader, 0 otherwise.")
	IsLearner = gauge("etcd", "server", "is_learner",
		"1 while this member is a learner, 0 otherwise.")
	LeaderChanges = counter("etcd", "server", "leader_changes_seen_total",
		"How many times this member has seen a new leader.")
	ProposalsCommitted = gauge("etcd", "server", "proposals_committed_total",
		"Raft index up to which entries are committed.")
	ProposalsApplied = gauge("etcd", "server", "proposals_applied_total",
		"Raft index up to which entries are applied.")
	ProposalsPending = gauge("etcd", "server", "proposals_pending",
		"Proposals made through this member still waiting for their result.")
	ProposalsFailed = counter("etcd", "server", "proposals_failed_total",
		"Proposals made through this member that failed (timed out, dropped, refused).")
	ReadIndexFailed = counter("etcd", "server", "read_indexes_failed_total",
		"Linearizable read barriers (ReadIndex) that failed.")
	QuotaBackendBytes = gauge("etcd", "server", "quota_backend_bytes",
		"Backend size, in bytes, at which the NOSPACE alarm is raised.")
	serverID = gaugeVec("etcd", "server", "id",
		"Constant 1, labelled with this member's ID in hex.", "server_id")
	serverVersion = gaugeVec("etcd", "server", "version",
		"Constant 1, labelled with the etcd version this server reports.", "server_version")
	goVersion = gaugeVec("etcd", "server", "go_version",
		"Constant 1, labelled with the Go version the server was built with.", "server_go_version")
)

// Disk.
var (
	WALFsyncSeconds = histogram("etcd", "disk", "wal_fsync_duration_seconds",
		"Time taken by each fdatasync of the WAL.", diskBuckets)
	WALWriteBytes = gauge("etcd", "disk", "wal_write_bytes_total",
		"Bytes written to the WAL so far.")
	BackendCommitSeconds = histogram("etcd", "disk", "backend_commit_duration_seconds",
		"Time taken by each commit of the backend database.", diskBuckets)
	BackendDefragSeconds = histogram("etcd", "disk", "backend_defrag_duration_seconds",
		"Time taken by each defragmentation of the backend database.", prometheus.ExponentialBuckets(0.1, 2, 13))
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

// Store figures, read through the Source.
var (
	dbTotalSize = sourceGauge("etcd", "mvcc", "db_total_size_in_bytes",
		"Size of the backend database file, in bytes.",
		func(s Source) float64 { return float64(s.DBSize()) })
	dbTotalSizeInUse = sourceGauge("etcd", "mvcc", "db_total_size_in_use_in_bytes",
		"Part of the backend database file holding data (not free pages), in bytes.",
		func(s Source) float64 { return float64(s.DBSizeInUse()) })
	currentRevision = sourceGauge("etcd_debugging", "mvcc", "current_revision",
		"The store's current revision.",
		func(s Source) float64 { return float64(s.Rev()) })
	compactRevision = sourceGauge("etcd_debugging", "mvcc", "compact_revision",
		"Revision of the store's last compaction (-1 if none).",
		func(s Source) float64 { return float64(s.CompactRev()) })
	authRevision = sourceGauge("etcd_debugging", "auth", "revision",
		"The auth store's revision.",
		func(s Source) float64 { return float64(s.AuthRevision()) })
	keysTotal = sourceGauge("etcd_debugging", "mvcc", "keys_total",
		"Number of keys in the store's index.",
		func(s Source) float64 { return float64(s.Keys()) })
)

// MVCC operation counters (counted when a request is applied or served).
var (
	MVCCPut = counter("etcd", "mvcc", "put_total",
		"Puts applied by this member.")
	MVCCDelete = counter("etcd", "mvcc", "delete_total",
		"Delete-range operations applied by this member.")
	MVCCRange = counter("etcd", "mvcc", "range_total",
		"Range requests served by this member.")
	MVCCTxn = counter("etcd", "mvcc", "txn_total",
		"Transactions applied by this member.")
)

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
