package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
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

// snapshotTransferBuckets: 100ms doubling to about 51s.
var snapshotTransferBuckets = prometheus.ExponentialBuckets(0.1, 2, 10)

// Client gRPC traffic in bytes, counted on the wire by a stats handler.
var (
	ClientGRPCSentBytes = counter("etcd", "network", "client_grpc_sent_bytes_total",
		"Bytes of gRPC payload sent to clients.")
	ClientGRPCReceivedBytes = counter("etcd", "network", "client_grpc_received_bytes_total",
		"Bytes of gRPC payload received from clients.")
)

// ID formats a member ID as the label value etcd uses.
func ID(id uint64) string { return strconv.FormatUint(id, 16) }
