package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/tests/harness"
)

// TestClientURLFormsLikeEtcd serves the client URLs in the forms etcd
// accepts beyond one URL per port, on cairn and on etcd v3.7.3, and
// compares what clients get, probe by probe:
//   - http:// and https:// on one port, and unix:// and unixs:// on one
//     socket: each connection is plaintext or TLS as the client chooses,
//     gRPC and HTTP (HTTP/1.1, and HTTP/2 over TLS);
//   - --listen-client-http-urls on one port in http and https: HTTP/1.1
//     and HTTP/2 over TLS there, gRPC only on the client URLs;
//   - /debug/vars (expvar JSON), /debug/pprof with --enable-pprof, and
//     /debug/pprof plus /debug/requests and /debug/events with
//     --log-level=debug.
func TestClientURLFormsLikeEtcd(t *testing.T) {
	ca := newTestCA(t)
	cert, key, _ := ca.issue("server", certOpts{cn: "server", ips: []string{"127.0.0.1"}})
	bins := cairnAndEtcd(t)
	scenarios := []struct {
		name string
		run  func(t *testing.T, bin string) []string
	}{
		{"shared port and socket", func(t *testing.T, bin string) []string { return probeSharedPort(t, ca, cert, key, bin) }},
		{"client http urls", func(t *testing.T, bin string) []string { return probeClientHTTPURLs(t, ca, cert, key, bin) }},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			results := map[string][]string{}
			for name, bin := range bins {
				results[name] = sc.run(t, bin)
			}
			want, ok := results["etcd"]
			if !ok {
				t.Skip("etcd not available to compare with")
			}
			got := results["cairn"]
			for i := range max(len(got), len(want)) {
				g, w := at(got, i), at(want, i)
				if g != w {
					t.Errorf("probe %d:\n  cairn %s\n  etcd  %s", i, g, w)
				}
			}
		})
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<missing>"
}

// clientURLMember starts a one-member cluster with the given client flags
// (they override newTLSMember's), in its own working directory (unix
// sockets are named relative to it).
func clientURLMember(t *testing.T, bin string, args ...string) *member {
	t.Helper()
	m := newTLSMember(t, tlsMemberOpts{clientScheme: "http", args: args})
	m.bin, m.cwd = bin, t.TempDir()
	m.start()
	return m
}

func probeSharedPort(t *testing.T, ca *testCA, cert, key, bin string) []string {
	port, sockPort := harness.FreePort(t), harness.FreePort(t)
	plain, secure := fmt.Sprintf("http://127.0.0.1:%d", port), fmt.Sprintf("https://127.0.0.1:%d", port)
	sock := fmt.Sprintf("localhost:%d", sockPort)
	m := clientURLMember(t, bin,
		"--listen-client-urls", strings.Join([]string{plain, secure, "unix://" + sock, "unixs://" + sock}, ","),
		"--advertise-client-urls", plain, "--cert-file", cert, "--key-file", key, "--enable-pprof")
	sockPath := filepath.Join(m.cwd, sock)
	var out []string
	put := grpcProbe(t, plain, nil, func(c *clientv3.Client) (string, error) {
		_, err := c.Put(ctx(t), "k", "v")
		return "put", err
	})
	get := grpcProbe(t, secure, ca.clientTLS("", ""), func(c *clientv3.Client) (string, error) {
		r, err := c.Get(ctx(t), "k")
		if err != nil {
			return "", err
		}
		return kvPairs(r.Kvs), nil
	})
	out = append(out, "grpc over http: "+put, "grpc over https on the same port: "+get)
	for _, p := range []httpTarget{
		{"http/1.1", httpClient(ca, false, ""), plain},
		{"https h1", httpClient(ca, false, ""), secure},
		{"https h2", httpClient(ca, true, ""), secure},
		{"unix", httpClient(ca, false, sockPath), "http://localhost"},
		{"unixs h1", httpClient(ca, false, sockPath), "https://127.0.0.1"},
		{"unixs h2", httpClient(ca, true, sockPath), "https://127.0.0.1"},
	} {
		out = append(out, p.getEach(t, "/health", "/debug/vars", "/debug/pprof/", "/debug/requests")...)
	}
	out = append(out, "POST /debug/vars: "+httpProbe(t, httpClient(ca, false, ""), http.MethodPost, plain+"/debug/vars"))
	return out
}

func probeClientHTTPURLs(t *testing.T, ca *testCA, cert, key, bin string) []string {
	grpcURL := fmt.Sprintf("https://127.0.0.1:%d", harness.FreePort(t))
	hport := harness.FreePort(t)
	hplain, hsecure := fmt.Sprintf("http://127.0.0.1:%d", hport), fmt.Sprintf("https://127.0.0.1:%d", hport)
	clientURLMember(t, bin,
		"--listen-client-urls", grpcURL, "--advertise-client-urls", grpcURL,
		"--listen-client-http-urls", hsecure+","+hplain,
		"--cert-file", cert, "--key-file", key, "--log-level", "debug")
	var out []string
	out = append(out, "grpc on the client url: "+grpcProbe(t, grpcURL, ca.clientTLS("", ""), func(c *clientv3.Client) (string, error) {
		_, err := c.Put(ctx(t), "foo", "bar")
		return "put", err
	}))
	for _, p := range []httpTarget{
		{"client url h1", httpClient(ca, false, ""), grpcURL},
		{"client url h2", httpClient(ca, true, ""), grpcURL},
		{"http url https h2", httpClient(ca, true, ""), hsecure},
		{"http url https h1", httpClient(ca, false, ""), hsecure},
		{"http url http/1.1", httpClient(ca, false, ""), hplain},
	} {
		out = append(out, p.getEach(t, "/version", "/health", "/metrics", "/debug/vars", "/debug/pprof/", "/debug/requests", "/debug/events")...)
		body := strings.NewReader(fmt.Sprintf(`{"key":%q}`, b64("foo")))
		out = append(out, p.what+" POST /v3/kv/range: "+httpProbeBody(t, p.client, http.MethodPost, p.base+"/v3/kv/range", body))
	}
	return out
}

// httpTarget is one way the probes reach a member's HTTP endpoints: a
// client (protocol, transport) and the base URL it sends to.
type httpTarget struct {
	what   string
	client *http.Client
	base   string
}

// getEach GETs every path through the target and returns one line per path
// naming the target, the path and the answer.
func (p httpTarget) getEach(t *testing.T, paths ...string) []string {
	t.Helper()
	var out []string
	for _, path := range paths {
		out = append(out, p.what+" GET "+path+": "+httpProbe(t, p.client, http.MethodGet, p.base+path))
	}
	return out
}

// httpClient speaks HTTP/1.1 only or (h2) HTTP/2 when TLS negotiates it,
// over TCP or, with sock, over that unix socket.
func httpClient(ca *testCA, h2 bool, sock string) *http.Client {
	tr := &http.Transport{TLSClientConfig: ca.clientTLS("", ""), ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	if sock != "" {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func httpProbe(t *testing.T, c *http.Client, method, url string) string {
	return httpProbeBody(t, c, method, url, nil)
}

// httpProbeBody renders an answer as status, protocol and content type,
// plus for /debug/vars the top-level keys of its JSON; a failed request
// is just "error" (the texts differ between the servers).
func httpProbeBody(t *testing.T, c *http.Client, method, url string, body io.Reader) string {
	t.Helper()
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx(t), method, url, body)
	must(t, err)
	resp, err := c.Do(req)
	if err != nil {
		return "error"
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		ct = "prometheus text" // the exposition format's parameters vary with the client library
	}
	out := fmt.Sprintf("%d %s %s", resp.StatusCode, resp.Proto, ct)
	if strings.HasSuffix(url, "/debug/vars") && resp.StatusCode == http.StatusOK {
		var vars map[string]json.RawMessage
		if err := json.Unmarshal(b, &vars); err != nil {
			return out + " not JSON: " + err.Error()
		}
		var keys []string
		for k := range vars {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out += " keys " + strings.Join(keys, ",")
	}
	return out
}

// grpcProbe runs op through a client of endpoint; a failure is rendered by
// its gRPC code.
func grpcProbe(t *testing.T, endpoint string, tlsCfg *tls.Config, op func(*clientv3.Client) (string, error)) string {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, TLS: tlsCfg, Logger: zap.NewNop()})
	must(t, err)
	defer cli.Close()
	res, err := op(cli)
	if err != nil {
		return "error " + status.Code(err).String()
	}
	return res
}
