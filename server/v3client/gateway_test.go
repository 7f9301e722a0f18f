package v3client

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// postJSON posts body to the member's gateway and decodes the answer.
func postJSON(t *testing.T, ctx context.Context, c *conns, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return resp.StatusCode, out
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestGatewayLockAndElection(t *testing.T) {
	ctx := testCtx(t)
	c := startMember(t)
	lease := grant(t, ctx, c)

	code, lock := postJSON(t, ctx, c, "/v3/lock/lock", fmt.Sprintf(`{"name":%q,"lease":"%d"}`, b64("gw"), lease))
	if code != http.StatusOK || lock["key"] != b64(keyOf("gw", lease)) || lock["header"] == nil {
		t.Fatalf("/v3/lock/lock: %d %v, want key %s", code, lock, keyOf("gw", lease))
	}
	if code, unlock := postJSON(t, ctx, c, "/v3/lock/unlock", fmt.Sprintf(`{"key":%q}`, lock["key"])); code != http.StatusOK || unlock["header"] == nil {
		t.Fatalf("/v3/lock/unlock: %d %v", code, unlock)
	}

	code, camp := postJSON(t, ctx, c, "/v3/election/campaign", fmt.Sprintf(`{"name":%q,"lease":"%d","value":%q}`, b64("gwe"), lease, b64("v1")))
	leaderKey, _ := camp["leader"].(map[string]any)
	if code != http.StatusOK || leaderKey["key"] != b64(keyOf("gwe", lease)) {
		t.Fatalf("/v3/election/campaign: %d %v", code, camp)
	}
	lk, err := json.Marshal(leaderKey)
	if err != nil {
		t.Fatal(err)
	}
	if code, out := postJSON(t, ctx, c, "/v3/election/proclaim", fmt.Sprintf(`{"leader":%s,"value":%q}`, lk, b64("v2"))); code != http.StatusOK {
		t.Fatalf("/v3/election/proclaim: %d %v", code, out)
	}
	code, leader := postJSON(t, ctx, c, "/v3/election/leader", fmt.Sprintf(`{"name":%q}`, b64("gwe")))
	if kv, _ := leader["kv"].(map[string]any); code != http.StatusOK || kv["value"] != b64("v2") {
		t.Fatalf("/v3/election/leader: %d %v, want value v2", code, leader)
	}
	expectObserveLine(t, ctx, c, "gwe", b64("v2"))
	if code, out := postJSON(t, ctx, c, "/v3/election/resign", fmt.Sprintf(`{"leader":%s}`, lk)); code != http.StatusOK {
		t.Fatalf("/v3/election/resign: %d %v", code, out)
	}
	code, noLeader := postJSON(t, ctx, c, "/v3/election/leader", fmt.Sprintf(`{"name":%q}`, b64("gwe")))
	if code != http.StatusInternalServerError || noLeader["message"] != "election: no leader" || noLeader["code"] != float64(2) {
		t.Fatalf("/v3/election/leader without a leader: %d %v, want 500 code 2 election: no leader", code, noLeader)
	}
}

// expectObserveLine reads the first line of /v3/election/observe.
func expectObserveLine(t *testing.T, ctx context.Context, c *conns, name, value string) {
	t.Helper()
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(octx, http.MethodPost, c.url+"/v3/election/observe", strings.NewReader(fmt.Sprintf(`{"name":%q}`, b64(name))))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Result struct {
			Kv struct {
				Value string `json:"value"`
			} `json:"kv"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &out); err != nil || out.Result.Kv.Value != value {
		t.Fatalf("/v3/election/observe first line %s (%v), want value %s", line, err, value)
	}
}
