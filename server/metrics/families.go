package metrics

import "github.com/prometheus/client_golang/prometheus"

// Every family a member exports, declared in one place: etcd's names,
// labels and bucket layouts are what dashboards and alerts match, so this
// file is the list to hold against etcd's. The gRPC server families, kept
// by the interceptors, are in grpc.go.

// Bucket layouts, as etcd's.
var (
	// diskBuckets: 1ms doubling to about 8s (WAL fsync, backend commit).
	diskBuckets = prometheus.ExponentialBuckets(0.001, 2, 14)
	// grpcBuckets: the gRPC handling-time histogram's (Prometheus defaults).
	grpcBuckets = prometheus.DefBuckets
)

// hashBuckets: 10ms doubling to about 164s.
var hashBuckets = prometheus.ExponentialBuckets(0.01, 2, 15)

// snapshotTransferBuckets: 100ms doubling to about 51s.
var snapshotTransferBuckets = prometheus.ExponentialBuckets(0.1, 2, 10)

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

// Member events beyond raft's basic state.
var (
	ClientRequests = counterVec("etcd", "server", "client_requests_total",
		"Client gRPC calls, unary or stream, by the API version the client announces.", "type", "client_api_version")
	HeartbeatSendFailures = counter("etcd", "server", "heartbeat_send_failures_total",
		"Heartbeats the leader sent late because the raft loop was held up (slow disk).")
	SlowApplies = counter("etcd", "server", "slow_apply_total",
		"Applied entries that took longer than the warning threshold.")
	SlowReadIndexes = counter("etcd", "server", "slow_read_indexes_total",
		"Read index rounds that were slow or timed out waiting for the leader.")
	LeaseExpired = counter("etcd_debugging", "server", "lease_expired_total",
		"Leases this member, as leader, revoked because they expired.")
	SnapshotApplyInProgress = gauge("etcd", "server", "snapshot_apply_in_progress_total",
		"1 while the member applies a snapshot received from the leader.")
	LearnerPromoteSuccesses = counter("etcd", "server", "learner_promote_successes",
		"Learner promotions accepted while this member was the leader.")
	LearnerPromoteFailures = counterVec("etcd", "server", "learner_promote_failures",
		"Learner promotions refused while this member was the leader, by reason.", "Reason")
	featureEnabled = gaugeVec("etcd", "server", "feature_enabled",
		"1 if the feature gate is enabled, 0 if not, by gate and stage.", "name", "stage")
	RequestSeconds = histogramVec("etcd", "server", "request_duration_seconds",
		"Time from proposing a request to its result, by request type and outcome.", diskBuckets, "type", "success")
	// 0.1ms doubling to about 52s.
	RangeSeconds = histogramVec("etcd", "server", "range_duration_seconds",
		"Time taken by each range request, read barrier included, by outcome.", prometheus.ExponentialBuckets(0.0001, 2, 20), "success")
	// 0.1ms doubling to about 52s.
	ApplySeconds = histogramVec("etcd", "server", "apply_duration_seconds",
		"Time taken to apply each request, by request type (op) and outcome.", prometheus.ExponentialBuckets(0.0001, 2, 20), "version", "op", "success")
	clusterVersion = register(clusterVersionCollector{prometheus.NewDesc("etcd_cluster_version",
		"Constant 1, labelled with the cluster version (major.minor).", []string{"cluster_version"}, nil)})
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

// Peer network figures, as etcd's rafthttp exports them. Member IDs in
// labels are hex, as everywhere in etcd's output.
var (
	PeerActive = gaugeVec("etcd", "network", "active_peers",
		"1 while the connection to the remote peer is healthy.", "Local", "Remote")
	PeerDisconnected = counterVec("etcd", "network", "disconnected_peers_total",
		"Times the connection to the remote peer went from healthy to failed.", "Local", "Remote")
	PeerKnown = gaugeVec("etcd", "network", "known_peers",
		"1 for every member the transport knows, this one included.", "Local", "Remote")
	PeerSentBytes = counterVec("etcd", "network", "peer_sent_bytes_total",
		"Bytes of raft traffic sent to the peer.", "To")
	PeerReceivedBytes = counterVec("etcd", "network", "peer_received_bytes_total",
		"Bytes of raft traffic received from the peer.", "From")
	PeerSentFailures = counterVec("etcd", "network", "peer_sent_failures_total",
		"Messages to the peer that were dropped or failed to send.", "To")
	PeerReceivedFailures = counterVec("etcd", "network", "peer_received_failures_total",
		"Messages from the peer that could not be read or processed.", "From")
	// 0.1ms doubling to about 3.3s.
	PeerRoundTrip = histogramVec("etcd", "network", "peer_round_trip_time_seconds",
		"Round trip of a probe of the peer's /raft/probing endpoint.", prometheus.ExponentialBuckets(0.0001, 2, 16), "To")
)

// Snapshot transfers between peers.
var (
	SnapshotSendSuccess = counterVec("etcd", "network", "snapshot_send_success",
		"Snapshots sent to the peer in full.", "To")
	SnapshotSendFailures = counterVec("etcd", "network", "snapshot_send_failures",
		"Snapshots whose sending to the peer failed.", "To")
	SnapshotSendInflight = gaugeVec("etcd", "network", "snapshot_send_inflights_total",
		"Snapshots being sent to the peer now.", "To")
	SnapshotSendSeconds = histogramVec("etcd", "network", "snapshot_send_total_duration_seconds",
		"Time taken by each successful snapshot send.", snapshotTransferBuckets, "To")
	SnapshotReceiveSuccess = counterVec("etcd", "network", "snapshot_receive_success",
		"Snapshots received from the peer in full.", "From")
	SnapshotReceiveFailures = counterVec("etcd", "network", "snapshot_receive_failures",
		"Snapshots from the peer that could not be received or saved.", "From")
	SnapshotReceiveInflight = gaugeVec("etcd", "network", "snapshot_receive_inflights_total",
		"Snapshots being received from the peer now.", "From")
	SnapshotReceiveSeconds = histogramVec("etcd", "network", "snapshot_receive_total_duration_seconds",
		"Time taken by each successful snapshot receive.", snapshotTransferBuckets, "From")
)

// Client gRPC traffic in bytes, counted on the wire by a stats handler.
var (
	ClientGRPCSentBytes = counter("etcd", "network", "client_grpc_sent_bytes_total",
		"Bytes of gRPC payload sent to clients.")
	ClientGRPCReceivedBytes = counter("etcd", "network", "client_grpc_received_bytes_total",
		"Bytes of gRPC payload received from clients.")
)
