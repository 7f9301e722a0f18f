package httpapi

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAccessControl(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("next " + r.URL.Path)) })
	withCN := &tls.ConnectionState{HandshakeComplete: true, VerifiedChains: [][]*x509.Certificate{{{Subject: pkix.Name{CommonName: "alice"}}}}}
	tests := []struct {
		name       string
		cfg        AccessConfig
		method     string
		path, host string
		origin     string
		tls        *tls.ConnectionState
		wantCode   int
		wantOrigin string // Access-Control-Allow-Origin, "" for none
		wantBody   string // substring
	}{
		{name: "defaults allow all with CORS *", cfg: AccessConfig{CORS: []string{"*"}, HostWhitelist: []string{"*"}}, path: "/version", host: "x:2379", wantCode: 200, wantOrigin: "*", wantBody: "next /version"},
		{name: "empty lists allow all", path: "/health", host: "any", wantCode: 200, wantOrigin: "*", wantBody: "next /health"},
		{name: "OPTIONS answered at once", cfg: AccessConfig{CORS: []string{"*"}}, method: http.MethodOptions, path: "/v3/kv/range", host: "x", wantCode: 200, wantOrigin: "*"},
		{name: "listed origin echoed", cfg: AccessConfig{CORS: []string{"http://a"}}, path: "/version", host: "x", origin: "http://a", wantCode: 200, wantOrigin: "http://a", wantBody: "next"},
		{name: "other origin gets no CORS", cfg: AccessConfig{CORS: []string{"http://a"}}, path: "/version", host: "x", origin: "http://b", wantCode: 200, wantBody: "next"},
		{name: "host outside whitelist refused", cfg: AccessConfig{HostWhitelist: []string{"good"}}, path: "/version", host: "evil:2379", wantCode: http.StatusMisdirectedRequest, wantBody: `etcd --host-whitelist "evil"`},
		{name: "whitelisted host without port", cfg: AccessConfig{HostWhitelist: []string{"good"}}, path: "/version", host: "good:2379", wantCode: 200, wantOrigin: "*", wantBody: "next"},
		{name: "TLS skips the host check", cfg: AccessConfig{HostWhitelist: []string{"good"}}, path: "/version", host: "evil", tls: &tls.ConnectionState{HandshakeComplete: true}, wantCode: 200, wantOrigin: "*", wantBody: "next"},
		// The sniffing listener's plaintext connections report a zero state.
		{name: "zero TLS state is plaintext", cfg: AccessConfig{HostWhitelist: []string{"good"}}, path: "/version", host: "evil", tls: &tls.ConnectionState{}, wantCode: http.StatusMisdirectedRequest},
		{name: "v3beta served as v3", path: "/v3beta/kv/range", host: "x", wantCode: 200, wantOrigin: "*", wantBody: "next /v3/kv/range"},
		{name: "gateway refuses certificate CN under auth", cfg: AccessConfig{RejectGatewayCertCN: func() bool { return true }}, path: "/v3/kv/range", host: "x", tls: withCN, wantCode: 400, wantBody: "CommonName of client sending a request against gateway will be ignored"},
		{name: "CN fine without auth", cfg: AccessConfig{RejectGatewayCertCN: func() bool { return false }}, path: "/v3/kv/range", host: "x", tls: withCN, wantCode: 200, wantOrigin: "*", wantBody: "next"},
		{name: "CN fine outside the gateway", cfg: AccessConfig{RejectGatewayCertCN: func() bool { return true }}, path: "/health", host: "x", tls: withCN, wantCode: 200, wantOrigin: "*", wantBody: "next"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			r := httptest.NewRequest(method, tt.path, nil)
			r.Host, r.TLS = tt.host, tt.tls
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			rec := httptest.NewRecorder()
			WithAccessControl(tt.cfg, next, nil).ServeHTTP(rec, r)
			if rec.Code != tt.wantCode {
				t.Fatalf("code %d, want %d (body %q)", rec.Code, tt.wantCode, rec.Body)
			}
			if got := rec.Header().Get("Access-Control-Allow-Origin"); got != tt.wantOrigin {
				t.Fatalf("Access-Control-Allow-Origin %q, want %q", got, tt.wantOrigin)
			}
			if !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Fatalf("body %q lacks %q", rec.Body, tt.wantBody)
			}
			if tt.wantOrigin != "" && rec.Header().Get("Access-Control-Allow-Methods") != "POST, GET, OPTIONS, PUT, DELETE" {
				t.Fatalf("methods header %q", rec.Header().Get("Access-Control-Allow-Methods"))
			}
		})
	}
}
