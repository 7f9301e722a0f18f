package e2e

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// gatewayPost posts body to the JSON gateway's path, with the
// Authorization header when authorization is not empty, and returns the
// status, the Www-Authenticate header and the body.
func gatewayPost(t testing.TB, m *member, path, authorization, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, m.clientURL+path, strings.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, resp.Header.Get("Www-Authenticate"), string(b)
}

// rangeBody is a /v3/kv/range request for key.
func rangeBody(key string) string {
	return `{"key":"` + base64.StdEncoding.EncodeToString([]byte(key)) + `"}`
}

// TestAuthGateway: through the JSON gateway a client gets a token from
// /v3/auth/authenticate and sends it in the Authorization header (bare, as
// etcdctl's docs show, or after "Bearer "). Statuses, error bodies and
// headers are the ones etcd v3.7.3 answers (measured with curl; the test
// passes with CAIRN_E2E_REFERENCE=etcd).
func TestAuthGateway(t *testing.T) {
	m, _ := startAuthMember(t, memberOpts{bin: referenceBin(t)})

	code, _, body := gatewayPost(t, m, "/v3/auth/authenticate", "", `{"name":"alice","password":"alicepw"}`)
	var auth struct{ Token string }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &auth) != nil || auth.Token == "" {
		t.Fatalf("authenticate = %d %s", code, body)
	}
	const (
		userEmpty  = `{"code":3,"message":"etcdserver: user name is empty"}`
		authFailed = `{"code":3,"message":"etcdserver: authentication failed, invalid user ID or password"}`
		denied     = `{"code":7,"message":"etcdserver: permission denied"}`
		badToken   = `{"code":16,"message":"etcdserver: invalid auth token"}`
	)
	tests := []struct {
		name, path, authorization, body string
		wantCode                        int
		wantBody                        string // exact; "" checks only that it holds "kvs"
	}{
		{"token", "/v3/kv/range", auth.Token, rangeBody("ro"), http.StatusOK, ""},
		{"bearer token", "/v3/kv/range", "Bearer " + auth.Token, rangeBody("ro"), http.StatusOK, ""},
		{"no token", "/v3/kv/range", "", rangeBody("ro"), http.StatusBadRequest, userEmpty},
		{"no token, put", "/v3/kv/put", "", `{"key":"YS8x","value":"eA=="}`, http.StatusBadRequest, userEmpty},
		{"forbidden key", "/v3/kv/range", auth.Token, rangeBody("secret"), http.StatusForbidden, denied},
		{"invalid token", "/v3/kv/range", "unknown.1", rangeBody("ro"), http.StatusUnauthorized, badToken},
		{"invalid token, auth status", "/v3/auth/status", "unknown.1", `{}`, http.StatusUnauthorized, badToken},
		{"wrong password", "/v3/auth/authenticate", "", `{"name":"alice","password":"wrong"}`, http.StatusBadRequest, authFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, wwwAuth, body := gatewayPost(t, m, tt.path, tt.authorization, tt.body)
			if code != tt.wantCode {
				t.Errorf("status = %d, want %d (body %s)", code, tt.wantCode, body)
			}
			switch {
			case tt.wantBody == "" && !strings.Contains(body, `"kvs"`):
				t.Errorf("body = %s, want kvs", body)
			case tt.wantBody != "" && body != tt.wantBody:
				t.Errorf("body = %s, want %s", body, tt.wantBody)
			}
			// grpc-gateway names the reason of a 401 in this header.
			if wantAuth := tt.wantCode == http.StatusUnauthorized; wantAuth != (wwwAuth != "") ||
				wantAuth && wwwAuth != "etcdserver: invalid auth token" {
				t.Errorf("Www-Authenticate = %q", wwwAuth)
			}
		})
	}
	code, _, body = gatewayPost(t, m, "/v3/kv/put", auth.Token, `{"key":"YS8x","value":"eA=="}`) // a/1 = x
	if code != http.StatusOK {
		t.Fatalf("put with token = %d %s", code, body)
	}
	code, _, body = gatewayPost(t, m, "/v3/auth/status", "", `{}`)
	if code != http.StatusOK || !strings.Contains(body, `"enabled":true`) {
		t.Fatalf("auth status without a token = %d %s", code, body)
	}
}
