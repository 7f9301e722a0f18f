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
	metrics.SetSource(metricsSource{stores: s.stores, versions: s.versions})
}

// metricsSource reads the store figures for a scrape, each under the store
// lock.
type metricsSource struct {
	stores   *stores
	versions interface{ clusterVersion() string }
}

func (m metricsSource) read(f func(st *stores) int64) int64 {
	if !m.stores.rlock() {
		return 0
	}
	defer m.stores.mu.RUnlock()
	return f(m.stores)
}

func (m metricsSource) DBSize() int64 {
	return m.read(func(st *stores) int64 { return st.be.Size() })
}
func (m metricsSource) DBSizeInUse() int64 {
	return m.read(func(st *stores) int64 { return st.be.SizeInUse() })
}
func (m metricsSource) Rev() int64 { return m.read(func(st *stores) int64 { return st.kv.Rev() }) }
func (m metricsSource) CompactRev() int64 {
	return m.read(func(st *stores) int64 { return st.kv.CompactRev() })
}
func (m metricsSource) Keys() int {
	return int(m.read(func(st *stores) int64 { return int64(st.kv.KeyCount()) }))
}

func (m metricsSource) WatchBacklog() (slowWatchers, pendingEvents int) {
	if !m.stores.rlock() {
		return 0, 0
	}
	defer m.stores.mu.RUnlock()
	return m.stores.kv.WatchBacklog()
}

func (m metricsSource) ClusterVersion() string { return m.versions.clusterVersion() }

// AuthRevision needs no store lock: the auth store outlives the stores and
// guards itself.
func (m metricsSource) AuthRevision() uint64 {
	if m.stores.auth == nil {
		return 0
	}
	return m.stores.auth.Revision()
}
