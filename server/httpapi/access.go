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

// ServeHTTP passes the request through the controller's checks in order;
// the first that answers it ends the request, and a request none answers
// goes on to the wrapped handler.
func (ac *accessController) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for _, answered := range []func(http.ResponseWriter, *http.Request) bool{
		ac.servesBetaAsV3, ac.refusesHost, ac.refusesGatewayCertCN, ac.addsCORS, ac.answersPreflight,
	} {
		if answered(w, r) {
			return
		}
	}
	ac.h.ServeHTTP(w, r)
}

// servesBetaAsV3 rewrites etcd's old /v3beta/ gateway paths to /v3/.
func (ac *accessController) servesBetaAsV3(_ http.ResponseWriter, r *http.Request) bool {
	if rest, ok := strings.CutPrefix(r.URL.Path, PathGatewayBeta); ok {
		r.URL.Path = PathGateway + rest
	}
	return false
}

// overTLS reports a completed TLS handshake. The sniffing listener gives
// plaintext connections a zero TLS state, so r.TLS alone does not tell.
func overTLS(r *http.Request) bool { return r.TLS != nil && r.TLS.HandshakeComplete }

// refusesHost answers 421 to a plaintext request whose Host header is not
// whitelisted (etcd's guard against DNS rebinding).
func (ac *accessController) refusesHost(w http.ResponseWriter, r *http.Request) bool {
	host := hostname(r)
	if overTLS(r) || ac.hosts.allows(host) {
		return false
	}
	ac.lg.Warn("rejecting HTTP request to prevent DNS rebinding attacks", zap.String("host", host))
	http.Error(w, hostNotWhitelisted(host), http.StatusMisdirectedRequest)
	return true
}

// refusesGatewayCertCN answers 400 to a gateway request over TLS whose
// client certificate names a user, when the configuration says so.
func (ac *accessController) refusesGatewayCertCN(w http.ResponseWriter, r *http.Request) bool {
	if !overTLS(r) || ac.rejectCN == nil || !strings.HasPrefix(r.URL.Path, PathGateway) || !ac.rejectCN() || !hasCertCN(r) {
		return false
	}
	http.Error(w, "CommonName of client sending a request against gateway will be ignored and not used as expected", http.StatusBadRequest)
	return true
}

// addsCORS sets the CORS headers: for every origin when all are allowed,
// else for an allowed Origin header.
func (ac *accessController) addsCORS(w http.ResponseWriter, r *http.Request) bool {
	origin := "*"
	if !ac.cors.allows(origin) {
		origin = r.Header.Get("Origin")
		if !ac.cors.allows(origin) {
			return false
		}
	}
	for _, h := range corsHeaders {
		w.Header().Add(h.name, h.value)
	}
	w.Header().Add("Access-Control-Allow-Origin", origin)
	return false
}

// corsHeaders are the fixed CORS headers etcd sends with an allowed origin.
var corsHeaders = []struct{ name, value string }{
	{"Access-Control-Allow-Methods", "POST, GET, OPTIONS, PUT, DELETE"},
	{"Access-Control-Allow-Headers", "accept, content-type, authorization"},
}

// answersPreflight answers OPTIONS requests with 200 and the headers set so
// far.
func (ac *accessController) answersPreflight(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodOptions {
		return false
	}
	w.WriteHeader(http.StatusOK)
	return true
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
