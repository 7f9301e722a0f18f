package etcdserver

import (
	"github.com/cairnkv/cairn/server/metrics"
)

// exportMetrics points the scrape-time gauges at this member and records
// the constant ones.
func (s *Server) exportMetrics() {
	metrics.SetServerID(s.id)
	metrics.QuotaBackendBytes.Set(float64(s.quotaBytes()))
	metrics.ProposalsApplied.Set(float64(s.appliedIndex.Load()))
	metrics.SetLearner(s.isLearner.Load())
	metrics.SetSource(metricsSource{s})
}

func (s *Server) quotaBytes() int64 {
	if !s.rlockStores() {
		return 0
	}
	defer s.storeMu.RUnlock()
	return s.applier.QuotaBytes()
}

// metricsSource reads the store figures for a scrape.
type metricsSource struct{ s *Server }

func (m metricsSource) read(f func(s *Server) int64) int64 {
	if !m.s.rlockStores() {
		return 0
	}
	defer m.s.storeMu.RUnlock()
	return f(m.s)
}

func (m metricsSource) DBSize() int64 { return m.read(func(s *Server) int64 { return s.be.Size() }) }
func (m metricsSource) DBSizeInUse() int64 {
	return m.read(func(s *Server) int64 { return s.be.SizeInUse() })
}
func (m metricsSource) Rev() int64 { return m.read(func(s *Server) int64 { return s.kv.Rev() }) }
func (m metricsSource) CompactRev() int64 {
	return m.read(func(s *Server) int64 { return s.kv.CompactRev() })
}
func (m metricsSource) Keys() int {
	return int(m.read(func(s *Server) int64 { return int64(s.kv.KeyCount()) }))
}

func (m metricsSource) WatchBacklog() (slowWatchers, pendingEvents int) {
	if !m.s.rlockStores() {
		return 0, 0
	}
	defer m.s.storeMu.RUnlock()
	return m.s.kv.WatchBacklog()
}

func (m metricsSource) ClusterVersion() string { return m.s.versions.clusterVersion() }

func (m metricsSource) AuthRevision() uint64 {
	if m.s.authStore == nil {
		return 0
	}
	return m.s.authStore.Revision()
}
