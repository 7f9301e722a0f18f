package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
)

// etcd's health metrics, under etcd's names.
var (
	healthSuccess = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "server", Name: "health_success",
		Help: "The total number of successful health checks",
	})
	healthFailed = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "server", Name: "health_failures",
		Help: "The total number of failed health checks",
	})
	healthCheckGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "etcd", Subsystem: "server", Name: "healthcheck",
		Help: "The result of each kind of healthcheck.",
	}, []string{"type", "name"})
	healthCheckCounter = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "etcd", Subsystem: "server", Name: "healthchecks_total",
		Help: "The total number of each kind of healthcheck.",
	}, []string{"type", "name", "status"})
)

func init() {
	prometheus.MustRegister(healthSuccess, healthFailed, healthCheckGauge, healthCheckCounter)
}

// healthStatus is etcd's /health document; both fields are strings.
type healthStatus struct {
	Health string `json:"health"`
	Reason string `json:"reason"`
}

var healthy = healthStatus{Health: "true"}

// healthHandler serves /health: no alarm (except those named in ?exclude=),
// a leader (unless ?serializable=true), and a read that succeeds.
type healthHandler struct {
	h  Health
	lg *zap.Logger
}

func (hh *healthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !allowGet(w, r) {
		return
	}
	serializable := r.URL.Query().Get("serializable") == "true"
	status := hh.check(r.Context(), querySet(r, "exclude"), serializable)
	body, _ := json.Marshal(status)
	if status.Health != "true" {
		healthFailed.Inc()
		hh.lg.Warn("/health error", zap.String("output", string(body)), zap.Int("status-code", http.StatusServiceUnavailable))
		http.Error(w, string(body), http.StatusServiceUnavailable)
		return
	}
	healthSuccess.Inc()
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

func (hh *healthHandler) check(ctx context.Context, excludedAlarms map[string]bool, serializable bool) healthStatus {
	if reason := alarmReason(hh.h.Alarms(), excludedAlarms); reason != "" {
		return healthStatus{Health: "false", Reason: reason}
	}
	if !serializable && hh.h.Leader() == 0 {
		return healthStatus{Health: "false", Reason: "RAFT NO LEADER"}
	}
	ctx, cancel := context.WithTimeout(ctx, healthReadTimeout)
	defer cancel()
	if err := readCheck(hh.h, serializable)(ctx); err != nil {
		return healthStatus{Health: "false", Reason: fmt.Sprintf("RANGE ERROR:%s", err)}
	}
	return healthy
}

// alarmReason names the first active alarm not excluded, "" if none.
func alarmReason(alarms []*pb.AlarmMember, excluded map[string]bool) string {
	for _, a := range alarms {
		if excluded[a.Alarm.String()] {
			continue
		}
		switch a.Alarm {
		case pb.AlarmType_NOSPACE:
			return "ALARM NOSPACE"
		case pb.AlarmType_CORRUPT:
			return "ALARM CORRUPT"
		default:
			return "ALARM UNKNOWN"
		}
	}
	return ""
}

// readCheck returns the read a check performs. Without a local read check
// the member offers none finer, so a serializable check falls back to the
// linearizable one: stricter, never falsely healthy.
func readCheck(h Health, serializable bool) func(context.Context) error {
	if local, ok := h.(SerializableReadChecker); ok && serializable {
		return local.SerializableReadCheck
	}
	return h.LinearizableReadCheck
}
