package peer

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairnkv/cairn/server/metrics"
)

func TestSnapshotTransferMetrics(t *testing.T) {
	tests := []struct {
		name                 string
		saveErr              error
		wantSent, wantFailed float64
	}{
		{"success", nil, 1, 0},
		{"receiver fails to save", errors.New("disk full"), 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newMember(t, 11, clusterID), newMember(t, 12, clusterID)
			connect(a, b)
			a.store.db = bytes.Repeat([]byte("bolt"), 1<<16)
			b.store.saveErr = tt.saveErr
			to, from := metrics.ID(12), metrics.ID(11)
			series := map[string]func() float64{
				"send success":    func() float64 { return value(t, metrics.SnapshotSendSuccess, "To", to) },
				"send failures":   func() float64 { return value(t, metrics.SnapshotSendFailures, "To", to) },
				"receive success": func() float64 { return value(t, metrics.SnapshotReceiveSuccess, "From", from) },
				"receive failed":  func() float64 { return value(t, metrics.SnapshotReceiveFailures, "From", from) },
				"sent bytes":      func() float64 { return value(t, metrics.PeerSentBytes, "To", to) },
			}
			before := map[string]float64{}
			for name, f := range series {
				before[name] = f()
			}
			a.tr.Send([]*raftpb.Message{snapMsg(11, 12, 42)})
			a.rec.waitUntil(t, "snapshot report", func() bool { return len(a.rec.snapshots) == 1 })
			rise := func(name string) float64 { return series[name]() - before[name] }
			for name, want := range map[string]float64{
				"send success": tt.wantSent, "receive success": tt.wantSent,
				"send failures": tt.wantFailed, "receive failed": tt.wantFailed,
			} {
				if got := rise(name); got != want {
					t.Errorf("%s rose by %v, want %v", name, got, want)
				}
			}
			// A receiver that fails may stop reading early: only a saved
			// snapshot proves the whole database crossed the wire.
			if got := rise("sent bytes"); tt.saveErr == nil && got < float64(len(a.store.db)) {
				t.Errorf("sent bytes rose by %v, want at least the %d bytes of the database", got, len(a.store.db))
			}
			if v := value(t, metrics.SnapshotSendInflight, "To", to); v != 0 {
				t.Errorf("send inflight = %v after the transfer", v)
			}
		})
	}
}

func TestPeerStatusMetrics(t *testing.T) {
	a, b := newMember(t, 21, clusterID), newMember(t, 22, clusterID)
	connect(a, b)
	waitStreams(t, a, 22)
	local, remote := metrics.ID(21), metrics.ID(22)
	active := func() float64 { return value(t, metrics.PeerActive, "Local", local, "Remote", remote) }
	if v := active(); v != 1 {
		t.Fatalf("active_peers = %v with streams up, want 1", v)
	}
	a.rec.waitUntil(t, "a round trip probe", func() bool { return value(t, metrics.PeerRoundTrip, "To", remote) > 0 })
	disconnects := value(t, metrics.PeerDisconnected, "Local", local, "Remote", remote)
	b.stop()
	a.rec.waitUntil(t, "peer inactive", func() bool { return active() == 0 })
	if got := value(t, metrics.PeerDisconnected, "Local", local, "Remote", remote); got != disconnects+1 {
		t.Errorf("disconnected_peers_total = %v, want %v", got, disconnects+1)
	}
	a.tr.RemovePeer(22)
	if _, known := sample(t, metrics.PeerKnown); slices.ContainsFunc(known, func(l map[string]string) bool { return l["Local"] == local && l["Remote"] == remote }) {
		t.Errorf("known_peers still lists removed peer %s", remote)
	}
}

// sample gathers c and returns the value of its series whose labels
// include want (a histogram's sample count), 0 if there is none, and
// every series' labels.
func sample(t *testing.T, c prometheus.Collector, want ...string) (float64, []map[string]string) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var value float64
	var all []map[string]string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			all = append(all, labels)
			match := true
			for k := 0; k+1 < len(want); k += 2 {
				match = match && labels[want[k]] == want[k+1]
			}
			if match {
				value = m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return value, all
}

// value is sample's value alone.
func value(t *testing.T, c prometheus.Collector, want ...string) float64 {
	t.Helper()
	v, _ := sample(t, c, want...)
	return v
}
