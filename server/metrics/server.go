package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Member events beyond raft's basic state (metrics.go).
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

// clusterVersionCollector reads the cluster version through the Source at
// scrape time; it exports nothing while the version is not decided yet.
type clusterVersionCollector struct{ desc *prometheus.Desc }

func (c clusterVersionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c clusterVersionCollector) Collect(ch chan<- prometheus.Metric) {
	b := source.Load()
	if b == nil {
		return
	}
	v := majorMinor(b.s.ClusterVersion())
	if v == "" {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, v)
}

// majorMinor cuts "3.7.0" to "3.7".
func majorMinor(v string) string {
	if i := strings.IndexByte(v, '.'); i >= 0 {
		if j := strings.IndexByte(v[i+1:], '.'); j >= 0 {
			return v[:i+1+j]
		}
	}
	return v
}

// SetFeatureGate records a feature gate's effective value.
func SetFeatureGate(name, stage string, enabled bool) {
	v := 0.0
	if enabled {
		v = 1
	}
	featureEnabled.WithLabelValues(name, stage).Set(v)
}
