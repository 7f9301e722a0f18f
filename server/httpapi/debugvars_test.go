package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"go.etcd.io/raft/v3"
	"go.uber.org/zap"
)

// raftHealth reports a raft status, or an error.
type raftHealth struct {
	*fakeHealth
	st  raft.Status
	err error
}

func (r raftHealth) RaftStatus() (raft.Status, error) { return r.st, r.err }

func TestDebugVars(t *testing.T) {
	st := raft.Status{}
	st.ID, st.Lead = 0x1234, 0x1234
	tests := []struct {
		name     string
		h        Health
		wantRaft string
	}{
		{"member", raftHealth{fakeHealth: &fakeHealth{}, st: st}, `"id":"1234"`},
		{"stopped", raftHealth{fakeHealth: &fakeHealth{}, err: errors.New("stopped")}, "null"},
		{"no raft", &fakeHealth{}, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, hdr := get(t, NewHandler(tt.h, zap.NewNop()), PathDebugVars)
			if code != http.StatusOK || hdr.Get("Content-Type") != "application/json; charset=utf-8" {
				t.Fatalf("GET /debug/vars = %d %q", code, hdr.Get("Content-Type"))
			}
			var vars map[string]json.RawMessage
			if err := json.Unmarshal([]byte(body), &vars); err != nil {
				t.Fatalf("body is not JSON: %v\n%s", err, body)
			}
			var keys []string
			for k := range vars {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if got := strings.Join(keys, ","); got != "cmdline,file_descriptor_limit,memstats,raft.status" {
				t.Errorf("keys %s", got)
			}
			if raftJSON := string(vars["raft.status"]); !strings.Contains(raftJSON, tt.wantRaft) {
				t.Errorf("raft.status = %s, want it to hold %s", raftJSON, tt.wantRaft)
			}
			if !strings.HasPrefix(body, "{\n\"cmdline\": ") || !strings.HasSuffix(body, "\n}\n") {
				t.Errorf("not in expvar's layout: %.40q ... %q", body, body[len(body)-10:])
			}
		})
	}
	rec := httptest.NewRecorder()
	NewHandler(&fakeHealth{}, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, PathDebugVars, nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET" {
		t.Errorf("POST /debug/vars = %d Allow %q, want 405 Allow GET", rec.Code, rec.Header().Get("Allow"))
	}
}
