package raftnode

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/metrics"
)

func heartbeatFailures(t *testing.T) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.HeartbeatSendFailures)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return families[0].GetMetric()[0].GetCounter().GetValue()
}

func TestHeartbeatWatch(t *testing.T) {
	const interval = 100 * time.Millisecond
	hb := func(to uint64) *raftpb.Message {
		typ := raftpb.MsgHeartbeat
		return &raftpb.Message{Type: &typ, To: &to}
	}
	app := func(to uint64) *raftpb.Message {
		typ := raftpb.MsgApp
		return &raftpb.Message{Type: &typ, To: &to}
	}
	type send struct {
		at       time.Duration
		isLeader bool
		msgs     []*raftpb.Message
	}
	tests := []struct {
		name  string
		sends []send
		late  float64
	}{
		{"on time", []send{{0, true, []*raftpb.Message{hb(2), hb(3)}}, {interval, true, []*raftpb.Message{hb(2), hb(3)}}}, 0},
		{"exactly two intervals", []send{{0, true, []*raftpb.Message{hb(2)}}, {2 * interval, true, []*raftpb.Message{hb(2)}}}, 0},
		{"late to both peers", []send{{0, true, []*raftpb.Message{hb(2), hb(3)}}, {3 * interval, true, []*raftpb.Message{hb(2), hb(3)}}}, 2},
		{"other messages do not count", []send{{0, true, []*raftpb.Message{app(2)}}, {5 * interval, true, []*raftpb.Message{app(2)}}}, 0},
		{"a new term starts clean", []send{{0, true, []*raftpb.Message{hb(2)}}, {interval, false, nil}, {5 * interval, true, []*raftpb.Message{hb(2)}}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := heartbeatWatch{interval: interval}
			before := heartbeatFailures(t)
			start := time.Unix(1000, 0)
			for _, s := range tt.sends {
				w.observe(zap.NewNop(), s.isLeader, s.msgs, start.Add(s.at))
			}
			if got := heartbeatFailures(t) - before; got != tt.late {
				t.Errorf("heartbeat_send_failures_total rose by %v, want %v", got, tt.late)
			}
		})
	}
}
