package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Peer network figures, as etcd's rafthttp exports them. Member IDs in
// labels are hex, as everywhere in etcd's output.
var (
	PeerActive = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "etcd", Subsystem: "network", Name: "active_peers",
		Help: "1 while the connection to the remote peer is healthy.",
	}, []string{"Local", "Remote"})
	PeerDisconnected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "network", Name: "disconnected_peers_total",
		Help: "Times the connection to the remote peer went from healthy to failed.",
	}, []string{"Local", "Remote"})
	PeerKnown = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "etcd", Subsystem: "network", Name: "known_peers",
		Help: "1 for every member the transport knows, this one included.",
	}, []string{"Local", "Remote"})
	PeerSentBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "network", Name: "peer_sent_bytes_total",
		Help: "Bytes of raft traffic sent to the peer.",
	}, []string{"To"})
	PeerReceivedBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "network", Name: "peer_received_bytes_total",
		Help: "Bytes of raft traffic received from the peer.",
	}, []string{"From"})
	PeerSentFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "network", Name: "peer_sent_failures_total",
		Help: "Messages to the peer that were dropped or failed to send.",
	}, []string{"To"})
	PeerReceivedFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "network", Name: "peer_received_failures_total",
		Help: "Messages from the peer that could not be read or processed.",
	}, []string{"From"})
	PeerRoundTrip = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "etcd", Subsystem: "network", Name: "peer_round_trip_time_seconds",
		Help: "Round trip of a probe of the peer's /raft/probing endpoint.",
		// 0.1ms doubling to about 3.3s.
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	}, []string{"To"})
)

// Snapshot transfers between peers.
var (
	SnapshotSendSuccess = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "network", Name: "snapshot_send_success",
		Help: "Snapshots sent to the peer in full.",
	}, []string{"To"})
	SnapshotSendFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "network", Name: "snapshot_send_failures",
		Help: "Snapshots whose sending to the peer failed.",
	}, []string{"To"})
	SnapshotSendInflight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "etcd", Subsystem: "network", Name: "snapshot_send_inflights_total",
		Help: "Snapshots being sent to the peer now.",
	}, []string{"To"})
	SnapshotSendSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "etcd", Subsystem: "network", Name: "snapshot_send_total_duration_seconds",
		Help:    "Time taken by each successful snapshot send.",
		Buckets: snapshotTransferBuckets,
	}, []string{"To"})
	SnapshotReceiveSuccess = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "network", Name: "snapshot_receive_success",
		Help: "Snapshots received from the peer in full.",
	}, []string{"From"})
	SnapshotReceiveFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "network", Name: "snapshot_receive_failures",
		Help: "Snapshots from the peer that could not be received or saved.",
	}, []string{"From"})
	SnapshotReceiveInflight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "etcd", Subsystem: "network", Name: "snapshot_receive_inflights_total",
		Help: "Snapshots being received from the peer now.",
	}, []string{"From"})
	SnapshotReceiveSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "etcd", Subsystem: "network", Name: "snapshot_receive_total_duration_seconds",
		Help:    "Time taken by each successful snapshot receive.",
		Buckets: snapshotTransferBuckets,
	}, []string{"From"})
)

// snapshotTransferBuckets: 100ms doubling to about 51s.
var snapshotTransferBuckets = prometheus.ExponentialBuckets(0.1, 2, 10)

// Client gRPC traffic in bytes, counted on the wire by a stats handler.
var (
	ClientGRPCSentBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "network", Name: "client_grpc_sent_bytes_total",
		Help: "Bytes of gRPC payload sent to clients.",
	})
	ClientGRPCReceivedBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "network", Name: "client_grpc_received_bytes_total",
		Help: "Bytes of gRPC payload received from clients.",
	})
)

func registerNetwork() {
	prometheus.MustRegister(
		PeerActive, PeerDisconnected, PeerKnown,
		PeerSentBytes, PeerReceivedBytes, PeerSentFailures, PeerReceivedFailures, PeerRoundTrip,
		SnapshotSendSuccess, SnapshotSendFailures, SnapshotSendInflight, SnapshotSendSeconds,
		SnapshotReceiveSuccess, SnapshotReceiveFailures, SnapshotReceiveInflight, SnapshotReceiveSeconds,
		ClientGRPCSentBytes, ClientGRPCReceivedBytes,
	)
}

// ID formats a member ID as the label value etcd uses.
func ID(id uint64) string { return strconv.FormatUint(id, 16) }
