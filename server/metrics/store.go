package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Backend, WAL and snapshot files.
var (
	// 10ms doubling to about 655s.
	BackendSnapshotSeconds = histogram("etcd", "disk", "backend_snapshot_duration_seconds",
		"Time taken by each full copy of the backend database (snapshot send or download).", prometheus.ExponentialBuckets(0.01, 2, 17))
	WALWriteSeconds = histogram("etcd", "disk", "wal_write_duration_seconds",
		"Time taken by each write of records to the WAL (before fsync).", diskBuckets)
	BackendCommitRebalanceSeconds = histogram("etcd_debugging", "disk", "backend_commit_rebalance_duration_seconds",
		"Time each backend commit spent rebalancing the B+tree.", diskBuckets)
	BackendCommitSpillSeconds = histogram("etcd_debugging", "disk", "backend_commit_spill_duration_seconds",
		"Time each backend commit spent spilling nodes to pages.", diskBuckets)
	BackendCommitWriteSeconds = histogram("etcd_debugging", "disk", "backend_commit_write_duration_seconds",
		"Time each backend commit spent writing dirty pages.", diskBuckets)
	OpenReadTxns = gauge("etcd", "mvcc", "db_open_read_transactions",
		"Read transactions of the backend database open now.")
)

// Watch figures of the store. The slow-watcher and pending-event gauges
// are read at scrape time through the Source.
var (
	Watchers = gauge("etcd_debugging", "mvcc", "watcher_total",
		"Watchers open now.")
	WatchStreams = gauge("etcd_debugging", "mvcc", "watch_stream_total",
		"Watch streams open now.")
	WatchEvents = counter("etcd_debugging", "mvcc", "events_total",
		"Events handed to watchers.")
	slowWatchers = sourceGauge("etcd_debugging", "mvcc", "slow_watcher_total",
		"Watchers behind the store's revision (catching up or blocked on a full channel).",
		func(s Source) float64 { slow, _ := s.WatchBacklog(); return float64(slow) })
	pendingEvents = sourceGauge("etcd_debugging", "mvcc", "pending_events_total",
		"Events held for watchers whose channel was full.",
		func(s Source) float64 { _, n := s.WatchBacklog(); return float64(n) })
)

// Compaction and hashing of the store.
var (
	CompactionKeys = counter("etcd_debugging", "mvcc", "db_compaction_keys_total",
		"Revisions deleted from the backend by compactions.")
	CompactionLast = gauge("etcd_debugging", "mvcc", "db_compaction_last",
		"Unix time of the last finished compaction.")
	CompactionPauseMs = histogram("etcd_debugging", "mvcc", "db_compaction_pause_duration_milliseconds",
		"Time, in ms, each compaction round held the backend's batch.", prometheus.ExponentialBuckets(1, 2, 13))
	CompactionTotalMs = histogram("etcd_debugging", "mvcc", "db_compaction_total_duration_milliseconds",
		"Time, in ms, each whole compaction took.", prometheus.ExponentialBuckets(100, 2, 14))
	IndexCompactionPauseMs = histogram("etcd_debugging", "mvcc", "index_compaction_pause_duration_milliseconds",
		"Time, in ms, each compaction of the in-memory index took.", prometheus.ExponentialBuckets(0.5, 2, 14))
	HashSeconds = histogram("etcd", "mvcc", "hash_duration_seconds",
		"Time taken by each hash of the whole backend (Maintenance.Hash).", hashBuckets)
	HashRevSeconds = histogram("etcd", "mvcc", "hash_rev_duration_seconds",
		"Time taken by each hash of the key space at a revision (Maintenance.HashKV).", hashBuckets)
	TotalPutSize = gauge("etcd_debugging", "mvcc", "total_put_size_in_bytes",
		"Bytes of keys and values written by puts.")
	DefragInflight = gauge("etcd", "disk", "defrag_inflight",
		"1 while the backend is being defragmented.")
	// AutoDefrags and AutoDefragReclaimedBytes are cairn's own: automatic
	// reclamation (--experimental-auto-defrag-free-percent) has no etcd
	// counterpart.
	AutoDefrags = counter("cairn", "disk", "auto_defrags_total",
		"Automatic defragmentations started because the db file had too much free space.")
	AutoDefragReclaimedBytes = counter("cairn", "disk", "auto_defrag_reclaimed_bytes_total",
		"Bytes by which automatic defragmentations shrank the db file.")
)

// hashBuckets: 10ms doubling to about 164s.
var hashBuckets = prometheus.ExponentialBuckets(0.01, 2, 15)

// Snapshot files.
var (
	SnapSaveSeconds = histogram("etcd_debugging", "snap", "save_total_duration_seconds",
		"Time taken by each save of a .snap file (marshalling included).", diskBuckets)
	SnapMarshalSeconds = histogram("etcd_debugging", "snap", "save_marshalling_duration_seconds",
		"Time taken to marshal each snapshot before it is saved.", diskBuckets)
	SnapFsyncSeconds = histogram("etcd", "snap", "fsync_duration_seconds",
		"Time taken by each fsync of a .snap file.", diskBuckets)
	SnapDBSaveSeconds = histogram("etcd", "snap", "db_save_total_duration_seconds",
		"Time taken to receive and save each database snapshot from the leader.", prometheus.ExponentialBuckets(0.1, 2, 10))
	SnapDBFsyncSeconds = histogram("etcd", "snap", "db_fsync_duration_seconds",
		"Time taken by each fsync of a received database snapshot.", diskBuckets)
)

// The watch server's send loop (one per Watch stream).
var (
	WatchSendStreamSeconds = histogram("etcd_debugging", "server", "watch_send_loop_watch_stream_duration_seconds",
		"Time the send loop took to forward each response of the store to the client.", diskBuckets)
	WatchSendStreamPerEventSeconds = histogram("etcd_debugging", "server", "watch_send_loop_watch_stream_duration_per_event_seconds",
		"Forwarding time of each response with events, divided by its number of events.", diskBuckets)
	WatchSendControlSeconds = histogram("etcd_debugging", "server", "watch_send_loop_control_stream_duration_seconds",
		"Time the send loop took to handle each client request (create, cancel, progress).", diskBuckets)
	WatchSendProgressSeconds = histogram("etcd_debugging", "server", "watch_send_loop_progress_duration_seconds",
		"Time the send loop took for each periodic progress round.", diskBuckets)
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
	LeaseGranted = counter("etcd_debugging", "lease", "granted_total",
		"Leases granted.")
	LeaseRevoked = counter("etcd_debugging", "lease", "revoked_total",
		"Leases revoked.")
	LeaseRenewed = counter("etcd_debugging", "lease", "renewed_total",
		"Lease keepalives that renewed a lease on this member (the leader).")
	// 1s doubling to about 97 days.
	LeaseTTL = histogram("etcd_debugging", "lease", "ttl_total",
		"TTL, in seconds, of each granted lease.", prometheus.ExponentialBuckets(1, 2, 24))
)
