package etcdserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// TestReadHashKVRequestRefusals checks the statuses and bodies etcd's peers
// answer bad hash requests with; fetchPeerHashKV on the other side relies
// on them.
func TestReadHashKVRequestRefusals(t *testing.T) {
	s := &Server{lg: zap.NewNop()}
	tests := []struct {
		name, method, path, cid, body string
		status                        int
		text                          string
	}{
		{"ok", http.MethodGet, peerHashKVPath, "", `{"revision":5}`, 0, ""},
		{"same cluster", http.MethodGet, peerHashKVPath, "abc", `{}`, 0, ""},
		{"post", http.MethodPost, peerHashKVPath, "", `{}`, http.StatusMethodNotAllowed, "Method Not Allowed"},
		{"path", http.MethodGet, peerHashKVPath + "/x", "", `{}`, http.StatusBadRequest, "bad path"},
		{"other cluster", http.MethodGet, peerHashKVPath, "def", `{}`, http.StatusPreconditionFailed, "cluster ID mismatch"},
		{"bad json", http.MethodGet, peerHashKVPath, "", `{`, http.StatusBadRequest, "error unmarshalling request"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
		if tt.cid != "" {
			r.Header.Set("X-Etcd-Cluster-ID", tt.cid)
		}
		req, refusal := s.readHashKVRequest(r, "abc")
		switch {
		case tt.status == 0 && (refusal != nil || req == nil):
			t.Errorf("%s: refused %+v", tt.name, refusal)
		case tt.status != 0 && (refusal == nil || refusal.status != tt.status || !strings.Contains(refusal.text, tt.text)):
			t.Errorf("%s: got %+v, want %d %q", tt.name, refusal, tt.status, tt.text)
		}
	}
}
