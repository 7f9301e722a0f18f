package etcdserver

import (
	"github.com/cairnkv/cairn/server/metrics"
)

// exportMetrics points the scrape-time gauges at this member and records
// the constant ones.
func (s *Server) exportMetrics() {
	metrics.SetServerID(s.id)
	metrics.QuotaBackendBytes.Set(float64(s.stores.quotaBytes()))
	metrics.ProposalsApplied.Set(float64(s.appliedIndex.Load()))
	metrics.SetLearner(s.raftView.isLearner())
	metrics.SetSource(metricsSource{s})
}

// metricsSource reads the store figures for a scrape.
type metricsSource struct{ s *Server }

func (m metricsSource) read(f func(s *Server) int64) int64 {
	if !m.s.stores.rlock() {
		return 0
	}
	defer m.s.stores.mu.RUnlock()
	return f(m.s)
}

func (m metricsSource) DBSize() int64 {
	return m.read(func(s *Server) int64 { return s.stores.be.Size() })
}
func (m metricsSource) DBSizeInUse() int64 {
	return m.read(func(s *Server) int64 { return s.stores.be.SizeInUse() })
}
func (m metricsSource) Rev() int64 { return m.read(func(s *Server) int64 { return s.stores.kv.Rev() }) }
func (m metricsSource) CompactRev() int64 {
	return m.read(func(s *Server) int64 { return s.stores.kv.CompactRev() })
}
func (m metricsSource) Keys() int {
	return int(m.read(func(s *Server) int64 { return int64(s.stores.kv.KeyCount()) }))
}

func (m metricsSource) WatchBacklog() (slowWatchers, pendingEvents int) {
	if !m.s.stores.rlock() {
		return 0, 0
	}
	defer m.s.stores.mu.RUnlock()
	return m.s.stores.kv.WatchBacklog()
}

func (m metricsSource) ClusterVersion() string { return m.s.versions.clusterVersion() }

func (m metricsSource) AuthRevision() uint64 {
	if m.s.stores.auth == nil {
		return 0
	}
	return m.s.stores.auth.Revision()
}
