// Package dashboard owns cairn's built-in web dashboard: the page under
// /ui/ (HTML, CSS and JavaScript embedded in the binary, nothing fetched
// from elsewhere) and the few JSON endpoints under /ui/api/ that the JSON
// gateway has no equivalent for.
//
// The page reads and changes the member only through the gateway (/v3/...)
// and those endpoints, with the token the user logged in with. The
// endpoints never reach the member's state around the gRPC API: each one
// calls the member's own gRPC server with the caller's token, so every
// authentication and permission check is the one a gRPC client meets. The
// two things gRPC does not tell — raft's per-follower progress and the
// member's metrics over time — come from the RaftStatus interface and a
// Prometheus gatherer; they are shown only to a caller whose Status call
// succeeded (cluster view) or, like /metrics, to anyone (graphs).
//
// The package must never store a token, serve anything when the
// --experimental-dashboard flag is off (embed does not mount it then), or
// widen what the access controller in front of it (CORS, host whitelist,
// TLS) allows.
package dashboard

import (
	"crypto/tls"
	"embed"
	"io/fs"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/raft/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/pkg/defaults"
)

// Path is the prefix the dashboard is served under.
const Path = "/ui/"

// apiPath is the prefix of the dashboard's own JSON endpoints.
const apiPath = Path + "api/"

//go:embed assets
var assets embed.FS

// RaftStatusSource reports raft's view of the cluster from this member.
type RaftStatusSource interface {
	RaftStatus() (raft.Status, error)
}

// Config is what the dashboard needs from the member.
type Config struct {
	// Local is a connection to the member's own gRPC server; every call
	// the endpoints make on the caller's behalf goes through it.
	Local grpc.ClientConnInterface
	// Raft gives the leader's view of its followers.
	Raft RaftStatusSource
	// PeerTLS is used to dial other members' https:// client URLs for
	// their status; nil dials them without TLS and skips https:// ones.
	PeerTLS *tls.Config
	// Gatherer is read every SampleInterval for the graphs; nil means
	// prometheus.DefaultGatherer.
	Gatherer prometheus.Gatherer
	// SampleInterval is the graphs' resolution (default 2 s); they keep
	// the last ten minutes.
	SampleInterval time.Duration
	Logger         *zap.Logger
}

// Dashboard serves /ui/. Close stops its sampler and closes the
// connections it opened to other members.
type Dashboard struct {
	cfg     Config
	mux     *http.ServeMux
	remotes *remotes
	samples *sampler
	stop    chan struct{}
	done    chan struct{}
}

// New returns the dashboard and starts sampling the metrics.
func New(cfg Config) *Dashboard {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Gatherer == nil {
		cfg.Gatherer = prometheus.DefaultGatherer
	}
	cfg.SampleInterval = defaults.Positive(cfg.SampleInterval, 2*time.Second)
	d := &Dashboard{
		cfg:     cfg,
		remotes: newRemotes(cfg.PeerTLS),
		samples: newSampler(cfg.Gatherer, historyWindow/cfg.SampleInterval),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	d.mux = d.routes()
	go d.sampleLoop()
	return d
}

func (d *Dashboard) routes() *http.ServeMux {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets") // cannot fail: the directory is embedded
	mux.Handle(Path, http.StripPrefix(Path, noCache(http.FileServerFS(static))))
	mux.HandleFunc(apiPath+"cluster", d.serveCluster)
	mux.HandleFunc(apiPath+"metrics", d.serveMetrics)
	mux.HandleFunc(apiPath+"history", d.serveHistory)
	mux.HandleFunc(apiPath+"snapshot", d.serveSnapshot)
	mux.HandleFunc(apiPath+"move-leader", d.serveMoveLeader)
	mux.HandleFunc(apiPath, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such dashboard endpoint")
	})
	return mux
}

// ServeHTTP serves a request under /ui/ (and /ui, redirected).
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/ui" {
		http.Redirect(w, r, Path, http.StatusMovedPermanently)
		return
	}
	d.mux.ServeHTTP(w, r)
}

// Close stops the sampler and closes the connections to other members.
func (d *Dashboard) Close() {
	close(d.stop)
	<-d.done
	d.remotes.close()
}

func (d *Dashboard) sampleLoop() {
	defer close(d.done)
	t := time.NewTicker(d.cfg.SampleInterval)
	defer t.Stop()
	d.samples.sample(time.Now())
	for {
		select {
		case now := <-t.C:
			d.samples.sample(now)
		case <-d.stop:
			return
		}
	}
}

// noCache makes browsers revalidate the assets, so that a member upgraded
// in place serves its new page at once.
func noCache(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
		h.ServeHTTP(w, r)
	})
}

// With serves the dashboard under /ui/ and every other path with h.
func With(d *Dashboard, h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(Path, d)
	mux.Handle("/ui", d)
	mux.Handle("/", h)
	return mux
}
