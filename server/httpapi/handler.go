// Package httpapi owns the plain-HTTP side of the client URLs and the
// listener they share with gRPC.
//
// NewHandler serves etcd's operational endpoints: /version, /health, /livez,
// /readyz (with per-check sub-paths), /metrics and /debug/vars, with etcd's JSON, texts
// and status codes, so load balancers, probes and dashboards built for etcd
// work unchanged. Serve puts gRPC and HTTP/1.1 on one listener by sniffing
// each connection's first bytes. The package decides nothing about the
// member's health itself: it asks the member through the Health interface.
package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
)

// EtcdVersion is the etcd server version /version reports.
const EtcdVersion = "3.7.1"

// versionNotDecided is what /version reports for a cluster or storage
// version the member has not decided (yet).
const versionNotDecided = "not_decided"

// VersionReporter may be implemented by a Health to report the cluster and
// storage versions the member runs at ("" while undecided) on /version.
type VersionReporter interface {
	ClusterVersion() string
	StorageVersion() string
}

// Paths served by NewHandler.
const (
	PathVersion = "/version"
	PathHealth  = "/health"
	PathLivez   = "/livez"
	PathReadyz  = "/readyz"
	PathMetrics = "/metrics"
)

// healthReadTimeout bounds the read /health makes: etcd's request timeout
// with default settings (5 s plus two election timeouts of 1 s).
const healthReadTimeout = 7 * time.Second

// Health is what the endpoints need from the member.
type Health interface {
	// Leader is the current leader's member id, 0 when there is none.
	Leader() uint64
	// Alarms lists the active alarms.
	Alarms() []*pb.AlarmMember
	// LinearizableReadCheck performs a linearizable read (a quorum round).
	LinearizableReadCheck(ctx context.Context) error
}

// SerializableReadChecker may be implemented by a Health to add etcd's
// serializable_read check (a local read) to /livez and /readyz and to serve
// /health?serializable=true with a real local read.
type SerializableReadChecker interface {
	SerializableReadCheck(ctx context.Context) error
}

// LearnerReporter may be implemented by a Health to add etcd's non_learner
// check to /readyz.
type LearnerReporter interface {
	IsLearner() bool
}

// NewHandler returns the handler of the client URLs' HTTP endpoints.
func NewHandler(h Health, lg *zap.Logger) http.Handler {
	if lg == nil {
		lg = zap.NewNop()
	}
	mux := http.NewServeMux()
	mux.HandleFunc(PathVersion, func(w http.ResponseWriter, r *http.Request) { serveVersion(w, r, h) })
	mux.Handle(PathHealth, &healthHandler{h: h, lg: lg})
	livez, readyz := newCheckRegistries(h)
	livez.install(mux, lg)
	readyz.install(mux, lg)
	mux.Handle(PathMetrics, promhttp.Handler())
	mux.Handle(PathDebugVars, debugVarsHandler{h})
	return mux
}

// NewMetricsHandler returns the handler of --listen-metrics-urls: /metrics
// and the health endpoints (/health, /livez, /readyz), as etcd serves there.
func NewMetricsHandler(h Health, lg *zap.Logger) http.Handler {
	if lg == nil {
		lg = zap.NewNop()
	}
	mux := http.NewServeMux()
	mux.Handle(PathMetrics, promhttp.Handler())
	mux.Handle(PathHealth, &healthHandler{h: h, lg: lg})
	livez, readyz := newCheckRegistries(h)
	livez.install(mux, lg)
	readyz.install(mux, lg)
	return mux
}

// versions is etcd's /version document.
type versions struct {
	Server  string `json:"etcdserver"`
	Cluster string `json:"etcdcluster"`
	Storage string `json:"storage"`
}

func serveVersion(w http.ResponseWriter, r *http.Request, h Health) {
	if !allowGet(w, r) {
		return
	}
	vs := versions{Server: EtcdVersion, Cluster: versionNotDecided, Storage: versionNotDecided}
	if vr, ok := h.(VersionReporter); ok {
		if v := vr.ClusterVersion(); v != "" {
			vs.Cluster = v
		}
		if v := vr.StorageVersion(); v != "" {
			vs.Storage = v
		}
	}
	body, err := json.Marshal(vs)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

// allowGet answers 405 to anything but GET, as etcd does on these paths.
func allowGet(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet {
		return true
	}
	w.Header().Set("Allow", http.MethodGet)
	http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	return false
}

// querySet returns the non-empty values of a repeated query parameter.
func querySet(r *http.Request, name string) map[string]bool {
	set := map[string]bool{}
	for _, v := range r.URL.Query()[name] {
		if v != "" {
			set[v] = true
		}
	}
	return set
}
