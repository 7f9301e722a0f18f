package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
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
