package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestTLSHTTP2ReachesHTTPHandler: on an https client URL, a client that
// negotiates HTTP/2 through ALPN and sends plain HTTP requests (curl
// --http2, browsers, Go's http.Client) reaches /health and the JSON
// gateway, as with etcd, while gRPC keeps working on the same port.
func TestTLSHTTP2ReachesHTTPHandler(t *testing.T) {
	ca := newTestCA(t)
	srvCert, srvKey, _ := ca.issue("server", certOpts{cn: "server", ips: []string{"127.0.0.1"}})
	bins := cairnAndEtcd(t)
	for name, bin := range bins {
		t.Run(name, func(t *testing.T) {
			m := newTLSMember(t, tlsMemberOpts{args: []string{"--cert-file", srvCert, "--key-file", srvKey}})
			m.bin = bin
			m.start()
			mustPut(t, tlsClient(t, m.clientURL, ca.clientTLS("", "")), "foo", "bar") // gRPC
			h2 := &http.Client{Transport: &http.Transport{TLSClientConfig: ca.clientTLS("", ""), ForceAttemptHTTP2: true}}
			defer h2.CloseIdleConnections()
			do := func(method, path, body string) (int, string) {
				t.Helper()
				req, err := http.NewRequestWithContext(ctx(t), method, m.clientURL+path, strings.NewReader(body))
				must(t, err)
				resp, err := h2.Do(req)
				must(t, err)
				defer resp.Body.Close()
				if resp.ProtoMajor != 2 {
					t.Fatalf("%s %s went over %s, want HTTP/2", method, path, resp.Proto)
				}
				b, err := io.ReadAll(resp.Body)
				must(t, err)
				return resp.StatusCode, string(b)
			}
			if code, body := do(http.MethodGet, "/health", ""); code != 200 || body != healthyBody {
				t.Errorf("GET /health over h2 = %d %q", code, body)
			}
			if code, body := do(http.MethodPost, "/v3/kv/range", fmt.Sprintf(`{"key":%q}`, b64("foo"))); code != 200 || !strings.Contains(body, `"value":"`+b64("bar")+`"`) {
				t.Errorf("POST /v3/kv/range over h2 = %d %s", code, body)
			}
			if code, body := do(http.MethodGet, "/version", ""); code != 200 || !strings.Contains(body, `"etcdcluster":"3.7.0"`) {
				t.Errorf("GET /version over h2 = %d %s", code, body)
			}
		})
	}
}
