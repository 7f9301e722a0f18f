package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tests/harness"
)

// The JSON gateway is driven here as curl users drive it: plain HTTP
// POSTs of JSON bodies with base64 keys, no gRPC client. The same session
// runs against cairn and against etcd v3.7.3, and every answer must match
// once the values that differ between any two clusters (IDs, terms,
// tokens, URLs, sizes, hashes) are masked.

// b64 is the base64 form the gateway wants for bytes fields.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// volatileKeys are JSON fields whose values differ between two clusters
// doing the same work; their presence is compared, not their value.
var volatileKeys = map[string]bool{
	"cluster_id": true, "member_id": true, "raft_term": true, "ID": true, "token": true,
	"peerURLs": true, "clientURLs": true, "dbSize": true, "dbSizeInUse": true,
	"raftIndex": true, "raftAppliedIndex": true, "raftTerm": true, "leader": true, "hash": true,
	"blob": true, "remaining_bytes": true, "TTL": true, "dbSizeQuota": true,
}

// masked returns v with every volatile field's value replaced by "*".
func masked(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			switch {
			case volatileKeys[k], k == "version" && isServerVersion(x):
				out[k] = "*"
			case k == "members":
				out[k] = sortedByJSON(masked(x))
			default:
				out[k] = masked(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = masked(x)
		}
		return out
	}
	return v
}

// isServerVersion tells a server version ("3.7.3", differs between cairn
// and etcd) from a key's version (a count).
func isServerVersion(v any) bool {
	s, ok := v.(string)
	return ok && strings.Contains(s, ".")
}

// sortedByJSON orders a masked list by its elements' JSON: members are
// listed by ID, and IDs are random.
func sortedByJSON(v any) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	key := func(x any) string { b, _ := json.Marshal(x); return string(b) }
	sort.Slice(list, func(i, j int) bool { return key(list[i]) < key(list[j]) })
	return list
}

// render prints a decoded answer with sorted keys, masked.
func render(t *testing.T, v any) string {
	t.Helper()
	// Through JSON and back, so that typed slices and maps become []any
	// and map[string]any for masked.
	b, err := json.Marshal(v)
	must(t, err)
	var generic any
	must(t, json.Unmarshal(b, &generic))
	b, err = json.Marshal(masked(generic)) // maps marshal with sorted keys
	must(t, err)
	return string(b)
}

// gwSession records one cluster's answers, one line per step.
type gwSession struct {
	t          *testing.T
	url        string
	transcript []string
}

func (s *gwSession) note(step string, code int, answer string) {
	s.transcript = append(s.transcript, fmt.Sprintf("%s -> %d %s", step, code, answer))
}

// call POSTs body to /v3/path, with token as Authorization unless empty,
// and returns the status and the decoded answer.
func (s *gwSession) call(path, body, token string) (int, map[string]any) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(ctx(s.t), http.MethodPost, s.url+"/v3/"+path, strings.NewReader(body))
	must(s.t, err)
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	resp, err := http.DefaultClient.Do(req)
	must(s.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	must(s.t, err)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		s.t.Fatalf("POST /v3/%s: answer %q is not a JSON object: %v", path, raw, err)
	}
	// etcd's answers are compact JSON; scripts compare them as text.
	var compact bytes.Buffer
	must(s.t, json.Compact(&compact, raw))
	if compact.String() != string(raw) {
		s.t.Errorf("POST /v3/%s: answer %q is not compact JSON", path, raw)
	}
	return resp.StatusCode, out
}

// do calls path and notes the answer under step.
func (s *gwSession) do(step, path, body, token string) map[string]any {
	s.t.Helper()
	code, out := s.call(path, body, token)
	s.note(step, code, render(s.t, out))
	return out
}

// stream POSTs body to a streaming path and returns the answer's lines,
// decoded; the request body is closed at once (one request message).
func (s *gwSession) stream(path, body string) (int, []map[string]any) {
	s.t.Helper()
	code, raw := httpPost(s.t, s.url+"/v3/"+path, body)
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(raw), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			s.t.Fatalf("POST /v3/%s: line %q is not a JSON object: %v", path, l, err)
		}
		lines = append(lines, m)
	}
	return code, lines
}

func httpPost(t *testing.T, url, body string) (int, string) {
	t.Helper()
	return httpDo(t, http.MethodPost, url, body)
}

// str digs a string out of a decoded answer: path of keys, then indexes.
func str(v any, path ...any) string {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[p]
		case int:
			a, _ := v.([]any)
			if p >= len(a) {
				return ""
			}
			v = a[p]
		}
	}
	s, _ := v.(string)
	return s
}

func (s *gwSession) kv() {
	s.do("put", "kv/put", fmt.Sprintf(`{"key":%q,"value":%q}`, b64("foo"), b64("bar")), "")
	s.do("put prev_kv", "kv/put", fmt.Sprintf(`{"key":%q,"value":%q,"prev_kv":true}`, b64("foo"), b64("baz")), "")
	s.do("put foo2", "kv/put", fmt.Sprintf(`{"key":%q,"value":%q}`, b64("foo2"), b64("x")), "")
	s.do("range", "kv/range", fmt.Sprintf(`{"key":%q}`, b64("foo")), "")
	s.do("range prefix", "kv/range", fmt.Sprintf(`{"key":%q,"range_end":%q}`, b64("foo"), b64("fop")), "")
	s.do("range count_only", "kv/range", fmt.Sprintf(`{"key":%q,"range_end":%q,"count_only":true}`, b64("foo"), b64("fop")), "")
	s.do("range missing", "kv/range", fmt.Sprintf(`{"key":%q}`, b64("nope")), "")
	s.do("txn", "kv/txn", fmt.Sprintf(`{"compare":[{"key":%q,"target":"VALUE","result":"EQUAL","value":%q}],`+
		`"success":[{"request_put":{"key":%q,"value":%q}}],"failure":[{"request_range":{"key":%q}}]}`,
		b64("foo"), b64("baz"), b64("t"), b64("yes"), b64("foo")), "")
	s.do("txn failure", "kv/txn", fmt.Sprintf(`{"compare":[{"key":%q,"target":"VERSION","result":"GREATER","version":"10"}],`+
		`"failure":[{"request_range":{"key":%q}}]}`, b64("foo"), b64("foo")), "")
	s.do("deleterange", "kv/deleterange", fmt.Sprintf(`{"key":%q,"prev_kv":true}`, b64("foo2")), "")
	s.do("compaction", "kv/compaction", `{"revision":"3"}`, "")
	s.do("range compacted", "kv/range", fmt.Sprintf(`{"key":%q,"revision":"2"}`, b64("foo")), "")
	s.do("range no key", "kv/range", `{}`, "")
}

func (s *gwSession) lease() {
	s.do("lease grant", "lease/grant", `{"TTL":60,"ID":"4660"}`, "")
	s.do("put with lease", "kv/put", fmt.Sprintf(`{"key":%q,"value":%q,"lease":"4660"}`, b64("leased"), b64("v")), "")
	s.do("lease timetolive", "lease/timetolive", `{"ID":"4660","keys":true}`, "")
	s.do("lease leases", "lease/leases", `{}`, "")
	code, lines := s.stream("lease/keepalive", `{"ID":"4660"}`)
	s.note("lease keepalive", code, render(s.t, lines))
	s.do("lease revoke", "lease/revoke", `{"ID":"4660"}`, "")
	s.do("lease revoke again", "lease/revoke", `{"ID":"4660"}`, "")
	s.do("lease timetolive revoked", "lease/timetolive", `{"ID":"4660"}`, "")
}

func (s *gwSession) cluster() {
	s.do("member list", "cluster/member/list", `{}`, "")
	added := s.do("member add learner", "cluster/member/add", `{"peerURLs":["http://127.0.0.1:1"],"isLearner":true}`, "")
	id := str(added, "member", "ID")
	s.do("member update", "cluster/member/update", fmt.Sprintf(`{"ID":%q,"peerURLs":["http://127.0.0.1:2"]}`, id), "")
	s.do("member promote", "cluster/member/promote", fmt.Sprintf(`{"ID":%q}`, id), "")
	s.do("member remove", "cluster/member/remove", fmt.Sprintf(`{"ID":%q}`, id), "")
	s.do("member remove unknown", "cluster/member/remove", fmt.Sprintf(`{"ID":%q}`, id), "")
}

func (s *gwSession) maintenance() {
	// etcd records the storage version a little after it starts serving:
	// until then Status reports none or the detected "3.5.0" and Snapshot
	// carries no version. Wait until it follows the cluster version.
	if !harness.Poll(clusterWait, 100*time.Millisecond, func() bool {
		_, st := s.call("maintenance/status", `{}`, "")
		return str(st, "storageVersion") == "3.7.0"
	}) {
		s.t.Fatalf("storageVersion in Status not 3.7.0 after %v", clusterWait)
	}
	s.do("status", "maintenance/status", `{}`, "")
	s.do("alarm get", "maintenance/alarm", `{"action":"GET"}`, "")
	s.do("defragment", "maintenance/defragment", `{}`, "")
	s.do("hash", "maintenance/hash", `{}`, "")
	s.do("hashkv", "maintenance/hashkv", `{"revision":"0"}`, "")
	code, lines := s.stream("maintenance/snapshot", `{}`)
	// The number of chunks depends on the database's size: note the first
	// and the last.
	s.note("snapshot", code, render(s.t, []any{lines[0], lines[len(lines)-1]}))
}

func (s *gwSession) auth() {
	s.do("user add", "auth/user/add", `{"name":"root","password":"pw"}`, "")
	s.do("user grant root", "auth/user/grant", `{"user":"root","role":"root"}`, "")
	s.do("auth enable", "auth/enable", `{}`, "")
	s.do("authenticate wrong", "auth/authenticate", `{"name":"root","password":"nope"}`, "")
	tok := s.do("authenticate", "auth/authenticate", `{"name":"root","password":"pw"}`, "")
	token := str(tok, "token")
	if token == "" {
		s.t.Fatalf("no token in %v", tok)
	}
	s.do("range with token", "kv/range", fmt.Sprintf(`{"key":%q}`, b64("foo")), token)
	s.do("range without token", "kv/range", fmt.Sprintf(`{"key":%q}`, b64("foo")), "")
	s.do("range bad token", "kv/range", fmt.Sprintf(`{"key":%q}`, b64("foo")), "not-a-token")
	s.do("user list", "auth/user/list", `{}`, token)
	s.do("auth disable", "auth/disable", `{}`, token)
}

// watch opens a watch stream as curl does (the whole request body sent at
// once: over HTTP/1.1 etcd reads no more requests once it answers), sees a
// put made by another request, then cancels by closing the connection,
// after which the member drops the watcher.
func (s *gwSession) watch() {
	s.t.Helper()
	watchers := func() float64 {
		return parseExposition(s.t, scrapeText(s.t, s.url)).get(s.t, "etcd_debugging_mvcc_watcher_total")
	}
	before := watchers()
	wctx, cancel := context.WithCancel(ctx(s.t))
	defer cancel()
	req, err := http.NewRequestWithContext(wctx, http.MethodPost, s.url+"/v3/watch",
		strings.NewReader(fmt.Sprintf(`{"create_request":{"key":%q}}`, b64("w"))))
	must(s.t, err)
	resp, err := http.DefaultClient.Do(req)
	must(s.t, err)
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	next := func(step string) {
		line, err := lines.ReadBytes('\n')
		if err != nil {
			s.t.Fatalf("watch %s: %v (read %q)", step, err, line)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			s.t.Fatalf("watch %s: %q: %v", step, line, err)
		}
		s.note("watch "+step, resp.StatusCode, render(s.t, m))
	}
	next("created")
	s.do("put watched", "kv/put", fmt.Sprintf(`{"key":%q,"value":%q}`, b64("w"), b64("1")), "")
	next("event")
	cancel()
	if !harness.Poll(clusterWait, 50*time.Millisecond, func() bool { return watchers() == before }) {
		s.t.Fatalf("the watcher is still open %v after its connection closed", clusterWait)
	}
}

// runGatewaySession runs every service's steps against the gateway at url.
func runGatewaySession(t *testing.T, url string) []string {
	s := &gwSession{t: t, url: url}
	s.kv()
	s.watch()
	s.lease()
	s.cluster()
	s.maintenance()
	s.auth()
	return s.transcript
}

func TestGatewayMatchesEtcd(t *testing.T) {
	bin := etcdBinary(t)
	var ours, theirs []string
	t.Run("cairn", func(t *testing.T) {
		ours = runGatewaySession(t, startCluster(t, clusterOpts{size: 1}).members[0].clientURL)
	})
	t.Run("etcd", func(t *testing.T) {
		theirs = runGatewaySession(t, startCluster(t, clusterOpts{size: 1, bins: map[int]string{0: bin}}).members[0].clientURL)
	})
	if t.Failed() {
		return
	}
	for i := range max(len(ours), len(theirs)) {
		var a, b string
		if i < len(ours) {
			a = ours[i]
		}
		if i < len(theirs) {
			b = theirs[i]
		}
		if a != b {
			t.Errorf("step %d differs:\ncairn: %s\netcd:  %s", i, a, b)
		}
	}
	t.Logf("%d gateway answers compared:\n%s", len(ours), strings.Join(ours, "\n"))
}
