package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"go.uber.org/zap"
)

// AccessConfig is etcd's access control of the client URLs' HTTP side
// (--cors, --host-whitelist, and the gateway's refusal of certificate
// identities).
type AccessConfig struct {
	// CORS lists the allowed origins; empty or "*" allows all, and then
	// every response carries Access-Control-Allow-Origin: *, as etcd's
	// default does.
	CORS []string
	// HostWhitelist lists the Host headers accepted on plain HTTP; empty
	// or "*" accepts all. Requests over TLS are never checked (etcd's
	// defence against DNS rebinding).
	HostWhitelist []string
	// RejectGatewayCertCN, when it returns true, makes the gateway refuse
	// TLS requests whose verified client certificate has a common name:
	// etcd does so with --client-cert-auth while auth is enabled, since the
	// gateway would otherwise call the server as the certificate's user.
	RejectGatewayCertCN func() bool
}

// WithAccessControl wraps the client URLs' HTTP handler in etcd's access
// controller: /v3beta/ is served as /v3/, Host headers outside the
// whitelist are refused with 421 on plain HTTP, CORS headers are added for
// allowed origins, and OPTIONS requests are answered at once.
func WithAccessControl(cfg AccessConfig, h http.Handler, lg *zap.Logger) http.Handler {
	if lg == nil {
		lg = zap.NewNop()
	}
	return &accessController{cors: newAllowList(cfg.CORS), hosts: newAllowList(cfg.HostWhitelist), rejectCN: cfg.RejectGatewayCertCN, h: h, lg: lg}
}

type accessController struct {
	cors, hosts allowList
	rejectCN    func() bool
	h           http.Handler
	lg          *zap.Logger
}

// allowList is a set of allowed values; empty or holding "*" allows all.
type allowList map[string]bool

func newAllowList(values []string) allowList {
	l := allowList{}
	for _, v := range values {
		l[v] = true
	}
	return l
}

func (l allowList) allows(v string) bool { return len(l) == 0 || l["*"] || l[v] }

func (ac *accessController) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, PathGatewayBeta) {
		r.URL.Path = PathGateway + strings.TrimPrefix(r.URL.Path, PathGatewayBeta)
	}
	// The sniffing listener reports a zero TLS state for plaintext
	// connections, so only a completed handshake counts as TLS.
	if r.TLS == nil || !r.TLS.HandshakeComplete {
		if host := hostname(r); !ac.hosts.allows(host) {
			ac.lg.Warn("rejecting HTTP request to prevent DNS rebinding attacks", zap.String("host", host))
			http.Error(w, hostNotWhitelisted(host), http.StatusMisdirectedRequest)
			return
		}
	} else if ac.rejectCN != nil && strings.HasPrefix(r.URL.Path, PathGateway) && ac.rejectCN() && hasCertCN(r) {
		http.Error(w, "CommonName of client sending a request against gateway will be ignored and not used as expected", http.StatusBadRequest)
		return
	}
	if ac.cors.allows("*") {
		addCORSHeaders(w, "*")
	} else if origin := r.Header.Get("Origin"); ac.cors.allows(origin) {
		addCORSHeaders(w, origin)
	}
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusOK)
		return
	}
	ac.h.ServeHTTP(w, r)
}

func hasCertCN(r *http.Request) bool {
	for _, chain := range r.TLS.VerifiedChains {
		if len(chain) > 0 && chain[0].Subject.CommonName != "" {
			return true
		}
	}
	return false
}

// hostname is the request's Host header without its port.
func hostname(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.Host); err == nil {
		return host
	}
	return r.Host
}

func addCORSHeaders(w http.ResponseWriter, origin string) {
	w.Header().Add("Access-Control-Allow-Methods", "POST, GET, OPTIONS, PUT, DELETE")
	w.Header().Add("Access-Control-Allow-Origin", origin)
	w.Header().Add("Access-Control-Allow-Headers", "accept, content-type, authorization")
}

// hostNotWhitelisted is the body etcd answers a refused Host header with.
func hostNotWhitelisted(host string) string {
	return fmt.Sprintf(`
etcd received your request, but the Host header was unrecognized.

To fix this, choose one of the following options:
- Enable TLS, then any HTTPS request will be allowed.
- Add the hostname you want to use to the whitelist in settings.
  - e.g. etcd --host-whitelist %q

This requirement has been added to help prevent "DNS Rebinding" attacks (CVE-2018-5702).
`, host)
}
