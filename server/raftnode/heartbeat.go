package raftnode

import (
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/metrics"
)

// heartbeatWatch notices a leader that sends heartbeats late: with
// HeartbeatTick 1 raft emits one per peer every tick, so a gap of more than
// two ticks means the Ready loop was held up (typically by a slow fsync)
// and followers may start an election. Used only on the Ready loop's
// goroutine.
type heartbeatWatch struct {
	interval time.Duration
	last     map[uint64]time.Time
}

// observe records the heartbeats among msgs sent at now. Off the leader
// the history is forgotten, so a new term starts clean.
func (h *heartbeatWatch) observe(lg *zap.Logger, isLeader bool, msgs []*raftpb.Message, now time.Time) {
	if !isLeader || h.interval <= 0 {
		clear(h.last)
		return
	}
	if h.last == nil {
		h.last = make(map[uint64]time.Time)
	}
	for _, m := range msgs {
		if m.GetType() != raftpb.MsgHeartbeat {
			continue
		}
		to := m.GetTo()
		if prev, ok := h.last[to]; ok && now.Sub(prev) > 2*h.interval {
			metrics.HeartbeatSendFailures.Inc()
			lg.Warn("leader failed to send out heartbeat on time; took too long, leader is overloaded likely from slow disk",
				zap.String("to", metrics.ID(to)), zap.Duration("heartbeat-interval", h.interval),
				zap.Duration("expected-duration", 2*h.interval), zap.Duration("exceeded-duration", now.Sub(prev)-2*h.interval))
		}
		h.last[to] = now
	}
}
