package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
)

// namedCheck is one check of /livez or /readyz.
type namedCheck struct {
	name  string
	check func(context.Context) error
}

// checkRegistry is the set of checks behind /livez or /readyz. The root path
// runs all of them except those named in ?exclude=; each check also has its
// own sub-path. The checks run in a fixed order, so ?verbose output is
// stable.
type checkRegistry struct {
	kind   string // "livez" or "readyz", also the metric label
	checks []namedCheck
}

// newCheckRegistries builds etcd's checks: /livez is a local read; /readyz
// adds the corruption alarm, a linearizable read and not being a learner.
// Checks whose member side h does not implement are left out.
func newCheckRegistries(h Health) (livez, readyz *checkRegistry) {
	livez = &checkRegistry{kind: "livez"}
	readyz = &checkRegistry{kind: "readyz"}
	readyz.add("data_corruption", alarmCheck(h, pb.AlarmType_CORRUPT))
	if local, ok := h.(SerializableReadChecker); ok {
		livez.add("serializable_read", local.SerializableReadCheck)
		readyz.add("serializable_read", local.SerializableReadCheck)
	}
	readyz.add("linearizable_read", h.LinearizableReadCheck)
	if lr, ok := h.(LearnerReporter); ok {
		readyz.add("non_learner", learnerCheck(lr))
	}
	return livez, readyz
}

func (reg *checkRegistry) add(name string, check func(context.Context) error) {
	reg.checks = append(reg.checks, namedCheck{name: name, check: check})
}

func alarmCheck(h Health, alarm pb.AlarmType) func(context.Context) error {
	return func(context.Context) error {
		for _, a := range h.Alarms() {
			if a.Alarm == alarm {
				return fmt.Errorf("alarm activated: %s", alarm)
			}
		}
		return nil
	}
}

func learnerCheck(lr LearnerReporter) func(context.Context) error {
	return func(context.Context) error {
		if lr.IsLearner() {
			return fmt.Errorf("not supported for learner")
		}
		return nil
	}
}

func (reg *checkRegistry) install(mux *http.ServeMux, lg *zap.Logger) {
	root := "/" + reg.kind
	mux.Handle(root, reg.handler(root, lg, func(r *http.Request) []namedCheck {
		return reg.without(querySet(r, "exclude"), lg)
	}))
	for _, c := range reg.checks {
		only := []namedCheck{c}
		mux.Handle(root+"/"+c.name, reg.handler(root+"/"+c.name, lg, func(*http.Request) []namedCheck { return only }))
	}
}

// without returns the checks not excluded. Excluding an unknown check is
// not an error (etcd keeps old probes working across versions); it is logged.
func (reg *checkRegistry) without(excluded map[string]bool, lg *zap.Logger) []namedCheck {
	var kept []namedCheck
	for _, c := range reg.checks {
		if excluded[c.name] {
			delete(excluded, c.name)
			continue
		}
		kept = append(kept, c)
	}
	if len(excluded) > 0 {
		var unknown []string
		for name := range excluded {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
		lg.Warn("some health checks cannot be excluded", zap.String("missing-health-checks", strings.Join(unknown, ",")))
	}
	return kept
}

// handler runs the selected checks. It answers 200 "ok\n" (preceded by one
// line per check with ?verbose), or 503 listing every check's outcome.
func (reg *checkRegistry) handler(path string, lg *zap.Logger, selectChecks func(*http.Request) []namedCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowGet(w, r) {
			return
		}
		report, failed := reg.run(r.Context(), selectChecks(r))
		if failed {
			lg.Error("Health check error", zap.String("path", path), zap.String("reason", report), zap.Int("status-code", http.StatusServiceUnavailable))
			http.Error(w, report, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if _, verbose := r.URL.Query()["verbose"]; verbose {
			fmt.Fprint(w, report)
		}
		fmt.Fprint(w, "ok\n")
	})
}

// run runs checks and returns etcd's report ("[+]name ok" or
// "[-]name failed: reason", one per line) and whether any failed.
func (reg *checkRegistry) run(ctx context.Context, checks []namedCheck) (report string, failed bool) {
	var out strings.Builder
	for _, c := range checks {
		outcome := "success"
		if err := c.check(ctx); err != nil {
			fmt.Fprintf(&out, "[-]%s failed: %v\n", c.name, err)
			outcome, failed = "error", true
		} else {
			fmt.Fprintf(&out, "[+]%s ok\n", c.name)
		}
		reg.record(c.name, outcome)
	}
	return out.String(), failed
}

func (reg *checkRegistry) record(name, outcome string) {
	value := 0.0
	if outcome == "success" {
		value = 1
	}
	healthCheckGauge.With(prometheus.Labels{"type": reg.kind, "name": name}).Set(value)
	healthCheckCounter.With(prometheus.Labels{"type": reg.kind, "name": name, "status": outcome}).Inc()
}
