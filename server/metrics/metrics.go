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
	dbTotalSize = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "etcd", Subsystem: "mvcc", Name: "db_total_size_in_bytes",
		Help: "Size of the backend database file, in bytes.",
	}, fromSource(func(s Source) float64 { return float64(s.DBSize()) }))
	dbTotalSizeInUse = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "etcd", Subsystem: "mvcc", Name: "db_total_size_in_use_in_bytes",
		Help: "Part of the backend database file holding data (not free pages), in bytes.",
	}, fromSource(func(s Source) float64 { return float64(s.DBSizeInUse()) }))
	currentRevision = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "etcd_debugging", Subsystem: "mvcc", Name: "current_revision",
		Help: "The store's current revision.",
	}, fromSource(func(s Source) float64 { return float64(s.Rev()) }))
	compactRevision = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "etcd_debugging", Subsystem: "mvcc", Name: "compact_revision",
		Help: "Revision of the store's last compaction (-1 if none).",
	}, fromSource(func(s Source) float64 { return float64(s.CompactRev()) }))
	authRevision = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "etcd_debugging", Subsystem: "auth", Name: "revision",
		Help: "The auth store's revision.",
	}, fromSource(func(s Source) float64 { return float64(s.AuthRevision()) }))
	keysTotal = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "etcd_debugging", Subsystem: "mvcc", Name: "keys_total",
		Help: "Number of keys in the store's index.",
	}, fromSource(func(s Source) float64 { return float64(s.Keys()) }))
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
	prometheus.MustRegister(
		HasLeader, IsLeader, IsLearner, LeaderChanges,
		ProposalsCommitted, ProposalsApplied, ProposalsPending, ProposalsFailed,
		ReadIndexFailed, QuotaBackendBytes,
		serverID, serverVersion, goVersion,
		WALFsyncSeconds, WALWriteBytes, BackendCommitSeconds, BackendDefragSeconds,
		dbTotalSize, dbTotalSizeInUse, currentRevision, compactRevision, keysTotal, authRevision,
		MVCCPut, MVCCDelete, MVCCRange, MVCCTxn,
	)
	goVersion.WithLabelValues(runtime.Version()).Set(1)
	registerGRPC()
	registerNetwork()
	registerServer()
	registerStore()
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
// then buckets for histograms and label names for vectors.

func counter(ns, sub, name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help})
}

func counterVec(ns, sub, name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels)
}

func gauge(ns, sub, name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help})
}

func gaugeVec(ns, sub, name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels)
}

func histogram(ns, sub, name, help string, buckets []float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help, Buckets: buckets})
}

func histogramVec(ns, sub, name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help, Buckets: buckets}, labels)
}
