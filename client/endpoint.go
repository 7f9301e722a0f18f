package client

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"google.golang.org/grpc/resolver"
)

// unixPrefix marks a resolver address that is a unix socket path.
const unixPrefix = "unix:"

// endpoint is one parsed client URL.
type endpoint struct {
	raw    string
	addr   string // host:port, or unixPrefix+path
	host   string // TLS server name
	secure bool
}

func parseEndpoint(raw string) (endpoint, error) {
	if !strings.Contains(raw, "://") {
		if raw == "" {
			return endpoint{}, fmt.Errorf("client: empty endpoint")
		}
		return endpoint{raw: raw, addr: raw, host: hostOf(raw)}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return endpoint{}, fmt.Errorf("client: endpoint %q: %w", raw, err)
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return endpoint{}, fmt.Errorf("client: endpoint %q has no host", raw)
		}
		return endpoint{raw: raw, addr: u.Host, host: u.Hostname(), secure: u.Scheme == "https"}, nil
	case "unix", "unixs":
		return endpoint{raw: raw, addr: unixPrefix + u.Host + u.Path, host: "localhost", secure: u.Scheme == "unixs"}, nil
	default:
		return endpoint{}, fmt.Errorf("client: endpoint %q: unsupported scheme %q", raw, u.Scheme)
	}
}

func parseEndpoints(raws []string) ([]endpoint, error) {
	if len(raws) == 0 {
		return nil, ErrNoEndpoints
	}
	eps := make([]endpoint, 0, len(raws))
	for _, r := range raws {
		ep, err := parseEndpoint(r)
		if err != nil {
			return nil, err
		}
		eps = append(eps, ep)
	}
	return eps, nil
}

func hostOf(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// resolverState lists one address per endpoint: round_robin then opens one
// sub-connection per endpoint.
func resolverState(eps []endpoint) resolver.State {
	addrs := make([]resolver.Address, len(eps))
	for i, ep := range eps {
		addrs[i] = resolver.Address{Addr: ep.addr, ServerName: ep.host}
	}
	return resolver.State{Addresses: addrs}
}

// dial connects to a resolver address: a unix socket or a TCP host:port.
func dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	if path, ok := strings.CutPrefix(addr, unixPrefix); ok {
		return d.DialContext(ctx, "unix", path)
	}
	return d.DialContext(ctx, "tcp", addr)
}
