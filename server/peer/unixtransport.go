package peer

import (
	"context"
	"net"
	"net/http"
)

// Peer URLs may name unix sockets, as etcd allows: unix://host:port is
// the socket file "host:port" (relative to the member's working
// directory), spoken to in HTTP; unixs:// the same in HTTPS, the
// certificate checked against the URL's host. net/http knows neither
// scheme, so requests to them go through a second transport that dials
// the socket and sees the request as http(s).

// schemeTransport sends each request to the transport of its URL's
// scheme.
type schemeTransport struct {
	tcp  *http.Transport // http and https
	unix *http.Transport // unix and unixs, rewritten to http and https
}

// newSchemeTransport builds both transports from base: unix's is a clone
// that dials the socket named by the request's host through dial.
func newSchemeTransport(base *http.Transport, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *schemeTransport {
	unix := base.Clone()
	unix.Proxy = nil // a proxy cannot reach a local socket
	unix.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) {
		return dial(ctx, "unix", addr)
	}
	return &schemeTransport{tcp: base, unix: unix}
}

var unixSchemes = map[string]string{"unix": "http", "unixs": "https"}

func (t *schemeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	web, ok := unixSchemes[req.URL.Scheme]
	if !ok {
		return t.tcp.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.URL.Scheme = web
	return t.unix.RoundTrip(r)
}

// CloseIdleConnections closes both transports' idle connections (the
// http.Client calls it).
func (t *schemeTransport) CloseIdleConnections() {
	t.tcp.CloseIdleConnections()
	t.unix.CloseIdleConnections()
}

// NewHTTPTransport returns a round tripper for requests to peer URLs of
// every scheme a member may advertise, for the member's other peer
// requests (the member list when joining, lease and promote forwarding).
// base is used for http and https.
func NewHTTPTransport(base *http.Transport) http.RoundTripper {
	var d net.Dialer
	return newSchemeTransport(base, d.DialContext)
}
