package embed

import (
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/config"
	"github.com/cairnkv/cairn/server/httpapi"
	"github.com/cairnkv/cairn/server/metrics"
)

// serveHTTP serves h on l with a plain http.Server: the metrics URLs.
func serveHTTP(l net.Listener, h http.Handler, what string, lg *zap.Logger) *http.Server {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: zap.NewStdLog(lg.Named(what))}
	go func() {
		if err := hs.Serve(l); err != nil && err != http.ErrServerClosed {
			lg.Warn("listener stopped", zap.String("what", what), zap.String("address", l.Addr().String()), zap.Error(err))
		}
	}()
	lg.Info("serving "+what, zap.String("address", l.Addr().String()))
	return hs
}

// notifySystemd tells systemd the member is up (Type=notify units), as etcd
// does once it serves: "READY=1" on the datagram socket $NOTIFY_SOCKET. It
// does nothing when the variable is unset.
func notifySystemd(lg *zap.Logger) {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return
	}
	if err := sdNotify(addr, "READY=1"); err != nil {
		lg.Error("failed to notify systemd for readiness", zap.Error(err))
		return
	}
	lg.Info("notified systemd of readiness")
}

// sdNotify sends state to the unixgram socket addr ('@' is the abstract
// namespace, which Go spells the same way).
func sdNotify(addr, state string) error {
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Write([]byte(state))
	return err
}

// extraListeners are the optional HTTP-only listeners.
type extraListeners struct {
	http    []net.Listener // --listen-client-http-urls
	metrics []net.Listener // --listen-metrics-urls
}

// listenExtra binds --listen-client-http-urls and --listen-metrics-urls;
// https:// ones use the client TLS configuration, as in etcd.
func listenExtra(cfg *config.Config, clientTLS *tls.Config, lc *net.ListenConfig, lg *zap.Logger) (extraListeners, error) {
	var x extraListeners
	var err error
	if x.http, err = listenClientURLs(cfg.ListenClientHttpUrls, clientTLS, lc, lg); err != nil {
		return x, err
	}
	if x.metrics, err = listenAll(cfg.ListenMetricsUrls, clientTLS, lc); err != nil {
		closeAll(x.http)
		return extraListeners{}, err
	}
	return x, nil
}

func (x extraListeners) close() {
	closeAll(x.http)
	closeAll(x.metrics)
}

// serveExtra serves the client HTTP handler on the HTTP-only client URLs
// and /metrics plus health on the metrics URLs. The HTTP-only URLs go
// through the client mux without gRPC, so that they speak HTTP/1.1 and,
// over TLS, HTTP/2 as the client URLs do.
func (m *Member) serveExtra(x extraListeners, clientHTTP http.Handler) {
	for _, l := range x.http {
		m.client = append(m.client, httpapi.Serve(l, nil, clientHTTP))
		m.lg.Info("serving client HTTP traffic", zap.String("address", l.Addr().String()))
	}
	if len(x.metrics) == 0 {
		return
	}
	mh := httpapi.NewMetricsHandler(m.Server, m.lg)
	for _, l := range x.metrics {
		m.extra = append(m.extra, serveHTTP(l, mh, "metrics", m.lg))
	}
}

// setupMetrics applies --metrics and records the constant gauges.
func setupMetrics(cfg *config.Config) {
	if cfg.Metrics == "extensive" {
		metrics.EnableExtensive()
	}
	metrics.SetServerVersion(httpapi.EtcdVersion)
	for _, g := range cfg.FeatureGateStates() {
		metrics.SetFeatureGate(g.Name, g.Stage, g.Enabled)
	}
}

// notifyWhenReady tells systemd once the member serves requests.
func (m *Member) notifyWhenReady() {
	select {
	case <-m.Server.ReadyNotify():
		notifySystemd(m.lg)
	case <-m.Server.StopNotify():
	}
}
