package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Backend, WAL and snapshot files.
var (
	BackendSnapshotSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd", Subsystem: "disk", Name: "backend_snapshot_duration_seconds",
		Help: "Time taken by each full copy of the backend database (snapshot send or download).",
		// 10ms doubling to about 655s.
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 17),
	})
	WALWriteSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd", Subsystem: "disk", Name: "wal_write_duration_seconds",
		Help:    "Time taken by each write of records to the WAL (before fsync).",
		Buckets: diskBuckets,
	})
	BackendCommitRebalanceSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd_debugging", Subsystem: "disk", Name: "backend_commit_rebalance_duration_seconds",
		Help:    "Time each backend commit spent rebalancing the B+tree.",
		Buckets: diskBuckets,
	})
	BackendCommitSpillSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd_debugging", Subsystem: "disk", Name: "backend_commit_spill_duration_seconds",
		Help:    "Time each backend commit spent spilling nodes to pages.",
		Buckets: diskBuckets,
	})
	BackendCommitWriteSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd_debugging", Subsystem: "disk", Name: "backend_commit_write_duration_seconds",
		Help:    "Time each backend commit spent writing dirty pages.",
		Buckets: diskBuckets,
	})
	OpenReadTxns = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "etcd", Subsystem: "mvcc", Name: "db_open_read_transactions",
		Help: "Read transactions of the backend database open now.",
	})
)

// Watch figures of the store. The slow-watcher and pending-event gauges
// are read at scrape time through the Source.
var (
	Watchers = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "etcd_debugging", Subsystem: "mvcc", Name: "watcher_total",
		Help: "Watchers open now.",
	})
	WatchStreams = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "etcd_debugging", Subsystem: "mvcc", Name: "watch_stream_total",
		Help: "Watch streams open now.",
	})
	WatchEvents = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "etcd_debugging", Subsystem: "mvcc", Name: "events_total",
		Help: "Events handed to watchers.",
	})
	slowWatchers = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "etcd_debugging", Subsystem: "mvcc", Name: "slow_watcher_total",
		Help: "Watchers behind the store's revision (catching up or blocked on a full channel).",
	}, fromSource(func(s Source) float64 { slow, _ := s.WatchBacklog(); return float64(slow) }))
	pendingEvents = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "etcd_debugging", Subsystem: "mvcc", Name: "pending_events_total",
		Help: "Events held for watchers whose channel was full.",
	}, fromSource(func(s Source) float64 { _, n := s.WatchBacklog(); return float64(n) }))
)

// Compaction and hashing of the store.
var (
	CompactionKeys = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "etcd_debugging", Subsystem: "mvcc", Name: "db_compaction_keys_total",
		Help: "Revisions deleted from the backend by compactions.",
	})
	CompactionLast = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "etcd_debugging", Subsystem: "mvcc", Name: "db_compaction_last",
		Help: "Unix time of the last finished compaction.",
	})
	CompactionPauseMs = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd_debugging", Subsystem: "mvcc", Name: "db_compaction_pause_duration_milliseconds",
		Help:    "Time, in ms, each compaction round held the backend's batch.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 13),
	})
	CompactionTotalMs = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd_debugging", Subsystem: "mvcc", Name: "db_compaction_total_duration_milliseconds",
		Help:    "Time, in ms, each whole compaction took.",
		Buckets: prometheus.ExponentialBuckets(100, 2, 14),
	})
	IndexCompactionPauseMs = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd_debugging", Subsystem: "mvcc", Name: "index_compaction_pause_duration_milliseconds",
		Help:    "Time, in ms, each compaction of the in-memory index took.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 14),
	})
	HashSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd", Subsystem: "mvcc", Name: "hash_duration_seconds",
		Help:    "Time taken by each hash of the whole backend (Maintenance.Hash).",
		Buckets: hashBuckets,
	})
	HashRevSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd", Subsystem: "mvcc", Name: "hash_rev_duration_seconds",
		Help:    "Time taken by each hash of the key space at a revision (Maintenance.HashKV).",
		Buckets: hashBuckets,
	})
	TotalPutSize = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "etcd_debugging", Subsystem: "mvcc", Name: "total_put_size_in_bytes",
		Help: "Bytes of keys and values written by puts.",
	})
	DefragInflight = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "etcd", Subsystem: "disk", Name: "defrag_inflight",
		Help: "1 while the backend is being defragmented.",
	})
)

// hashBuckets: 10ms doubling to about 164s.
var hashBuckets = prometheus.ExponentialBuckets(0.01, 2, 15)

// Snapshot files.
var (
	SnapSaveSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd_debugging", Subsystem: "snap", Name: "save_total_duration_seconds",
		Help:    "Time taken by each save of a .snap file (marshalling included).",
		Buckets: diskBuckets,
	})
	SnapMarshalSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd_debugging", Subsystem: "snap", Name: "save_marshalling_duration_seconds",
		Help:    "Time taken to marshal each snapshot before it is saved.",
		Buckets: diskBuckets,
	})
	SnapFsyncSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd", Subsystem: "snap", Name: "fsync_duration_seconds",
		Help:    "Time taken by each fsync of a .snap file.",
		Buckets: diskBuckets,
	})
	SnapDBSaveSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd", Subsystem: "snap", Name: "db_save_total_duration_seconds",
		Help:    "Time taken to receive and save each database snapshot from the leader.",
		Buckets: prometheus.ExponentialBuckets(0.1, 2, 10),
	})
	SnapDBFsyncSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd", Subsystem: "snap", Name: "db_fsync_duration_seconds",
		Help:    "Time taken by each fsync of a received database snapshot.",
		Buckets: diskBuckets,
	})
)

// The watch server's send loop (one per Watch stream).
var (
	WatchSendStreamSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd_debugging", Subsystem: "server", Name: "watch_send_loop_watch_stream_duration_seconds",
		Help:    "Time the send loop took to forward each response of the store to the client.",
		Buckets: diskBuckets,
	})
	WatchSendStreamPerEventSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd_debugging", Subsystem: "server", Name: "watch_send_loop_watch_stream_duration_per_event_seconds",
		Help:    "Forwarding time of each response with events, divided by its number of events.",
		Buckets: diskBuckets,
	})
	WatchSendControlSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd_debugging", Subsystem: "server", Name: "watch_send_loop_control_stream_duration_seconds",
		Help:    "Time the send loop took to handle each client request (create, cancel, progress).",
		Buckets: diskBuckets,
	})
	WatchSendProgressSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd_debugging", Subsystem: "server", Name: "watch_send_loop_progress_duration_seconds",
		Help:    "Time the send loop took for each periodic progress round.",
		Buckets: diskBuckets,
	})
)

// ObserveWatchSend records the forwarding of one store response with
// events events.
func ObserveWatchSend(took time.Duration, events int) {
	WatchSendStreamSeconds.Observe(took.Seconds())
	if events > 0 {
		WatchSendStreamPerEventSeconds.Observe(took.Seconds() / float64(events))
	}
}

// Leases.
var (
	LeaseGranted = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "etcd_debugging", Subsystem: "lease", Name: "granted_total",
		Help: "Leases granted.",
	})
	LeaseRevoked = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "etcd_debugging", Subsystem: "lease", Name: "revoked_total",
		Help: "Leases revoked.",
	})
	LeaseRenewed = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "etcd_debugging", Subsystem: "lease", Name: "renewed_total",
		Help: "Lease keepalives that renewed a lease on this member (the leader).",
	})
	LeaseTTL = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "etcd_debugging", Subsystem: "lease", Name: "ttl_total",
		Help: "TTL, in seconds, of each granted lease.",
		// 1s doubling to about 97 days.
		Buckets: prometheus.ExponentialBuckets(1, 2, 24),
	})
)

func registerStore() {
	prometheus.MustRegister(
		BackendSnapshotSeconds, WALWriteSeconds, OpenReadTxns,
		BackendCommitRebalanceSeconds, BackendCommitSpillSeconds, BackendCommitWriteSeconds,
		Watchers, WatchStreams, WatchEvents, slowWatchers, pendingEvents,
		LeaseGranted, LeaseRevoked, LeaseRenewed, LeaseTTL,
		CompactionKeys, CompactionLast, CompactionPauseMs, CompactionTotalMs, IndexCompactionPauseMs,
		HashSeconds, HashRevSeconds, TotalPutSize, DefragInflight,
		WatchSendStreamSeconds, WatchSendStreamPerEventSeconds, WatchSendControlSeconds, WatchSendProgressSeconds,
		SnapSaveSeconds, SnapMarshalSeconds, SnapFsyncSeconds, SnapDBSaveSeconds, SnapDBFsyncSeconds,
	)
}
