package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Member events beyond raft's basic state (metrics.go).
var (
	ClientRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "server", Name: "client_requests_total",
		Help: "Client gRPC calls, unary or stream, by the API version the client announces.",
	}, []string{"type", "client_api_version"})
	HeartbeatSendFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "server", Name: "heartbeat_send_failures_total",
		Help: "Heartbeats the leader sent late because the raft loop was held up (slow disk).",
	})
	SlowApplies = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "server", Name: "slow_apply_total",
		Help: "Applied entries that took longer than the warning threshold.",
	})
	SlowReadIndexes = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "server", Name: "slow_read_indexes_total",
		Help: "Read index rounds that were slow or timed out waiting for the leader.",
	})
	LeaseExpired = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "etcd_debugging", Subsystem: "server", Name: "lease_expired_total",
		Help: "Leases this member, as leader, revoked because they expired.",
	})
	SnapshotApplyInProgress = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "etcd", Subsystem: "server", Name: "snapshot_apply_in_progress_total",
		Help: "1 while the member applies a snapshot received from the leader.",
	})
	LearnerPromoteSuccesses = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "server", Name: "learner_promote_successes",
		Help: "Learner promotions accepted while this member was the leader.",
	})
	LearnerPromoteFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "server", Name: "learner_promote_failures",
		Help: "Learner promotions refused while this member was the leader, by reason.",
	}, []string{"Reason"})
	featureEnabled = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "etcd", Subsystem: "server", Name: "feature_enabled",
		Help: "1 if the feature gate is enabled, 0 if not, by gate and stage.",
	}, []string{"name", "stage"})
	RequestSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "etcd", Subsystem: "server", Name: "request_duration_seconds",
		Help:    "Time from proposing a request to its result, by request type and outcome.",
		Buckets: diskBuckets,
	}, []string{"type", "success"})
	RangeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "etcd", Subsystem: "server", Name: "range_duration_seconds",
		Help: "Time taken by each range request, read barrier included, by outcome.",
		// 0.1ms doubling to about 52s.
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 20),
	}, []string{"success"})
	ApplySeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "etcd", Subsystem: "server", Name: "apply_duration_seconds",
		Help: "Time taken to apply each request, by request type (op) and outcome.",
		// 0.1ms doubling to about 52s.
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 20),
	}, []string{"version", "op", "success"})
	clusterVersion = clusterVersionCollector{prometheus.NewDesc("etcd_cluster_version",
		"Constant 1, labelled with the cluster version (major.minor).", []string{"cluster_version"}, nil)}
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

func registerServer() {
	prometheus.MustRegister(
		ClientRequests, HeartbeatSendFailures, SlowApplies, SlowReadIndexes,
		LeaseExpired, SnapshotApplyInProgress,
		LearnerPromoteSuccesses, LearnerPromoteFailures, clusterVersion, ApplySeconds,
		featureEnabled, RequestSeconds, RangeSeconds,
	)
}

// SetFeatureGate records a feature gate's effective value.
func SetFeatureGate(name, stage string, enabled bool) {
	v := 0.0
	if enabled {
		v = 1
	}
	featureEnabled.WithLabelValues(name, stage).Set(v)
}
