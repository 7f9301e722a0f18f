package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/pkg/freeport"
	"github.com/cairnkv/cairn/server/config"
	"github.com/cairnkv/cairn/server/embed"
	"github.com/cairnkv/cairn/server/httpapi"
)

// readyTimeout only keeps a broken member from hanging the test binary.
const readyTimeout = 10 * time.Second

// startMember starts a one-member cluster in-process and returns its client
// URL. It is closed when the test ends.
func startMember(t *testing.T) string {
	t.Helper()
	clientURL, peerURL := freeport.URL(t), freeport.URL(t)
	cfg := config.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.TickMs, cfg.ElectionMs = 10, 100
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.Name + "=" + peerURL.String()
	m, err := embed.StartMember(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	select {
	case <-m.ReadyNotify():
	case err := <-m.Err():
		t.Fatal(err)
	case <-time.After(readyTimeout):
		t.Fatal("member not ready")
	}
	return clientURL.String()
}

// post sends body to url (a form post, as `curl -d` does) and returns the
// status and the decoded JSON answer.
func post(t *testing.T, url, body string, header http.Header) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST %s: %v in %q", url, err, raw)
	}
	return resp.StatusCode, out
}

var decimal = regexp.MustCompile(`^[1-9][0-9]*$`)

// maskIDs checks that every response header below v carries cluster_id,
// member_id and raft_term as decimal strings and replaces them with "*",
// so that the rest compares exactly.
func maskIDs(t *testing.T, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		if h, ok := v["header"].(map[string]any); ok && h["cluster_id"] != nil {
			for _, k := range []string{"cluster_id", "member_id", "raft_term"} {
				if s, _ := h[k].(string); !decimal.MatchString(s) {
					t.Errorf("header %s = %#v, want a decimal string", k, h[k])
				}
				h[k] = "*"
			}
		}
		for _, e := range v {
			maskIDs(t, e)
		}
	case []any:
		for _, e := range v {
			maskIDs(t, e)
		}
	}
}

// header is a masked response header at revision rev.
func header(rev string) map[string]any {
	return map[string]any{"cluster_id": "*", "member_id": "*", "revision": rev, "raft_term": "*"}
}

// expectJSON posts body to path and compares the masked answer with want.
func expectJSON(t *testing.T, base, path, body string, want map[string]any) {
	t.Helper()
	code, got := post(t, base+path, body, nil)
	maskIDs(t, got)
	if code != http.StatusOK || !reflect.DeepEqual(got, want) {
		t.Errorf("POST %s %s\n got %d %v\nwant 200 %v", path, body, code, got, want)
	}
}

// TestGatewayMember drives etcd's JSON gateway of a real member with the
// bodies etcd's documentation uses (foo = Zm9v, bar = YmFy, baz = YmF6).
func TestGatewayMember(t *testing.T) {
	base := startMember(t)
	expectJSON(t, base, "/v3/kv/put", `{"key":"Zm9v","value":"YmFy"}`,
		map[string]any{"header": header("2")})
	expectJSON(t, base, "/v3/kv/range", `{"key":"Zm9v"}`, map[string]any{
		"header": header("2"), "count": "1",
		"kvs": []any{map[string]any{"key": "Zm9v", "value": "YmFy",
			"create_revision": "2", "mod_revision": "2", "version": "1"}},
	})
	code, txn := post(t, base+"/v3/kv/txn", `{"compare":[{"key":"Zm9v","target":"VALUE","value":"YmFy"}],`+
		`"success":[{"request_put":{"key":"Zm9v","value":"YmF6"}}]}`, nil)
	maskIDs(t, txn)
	if code != http.StatusOK || txn["succeeded"] != true || !reflect.DeepEqual(txn["header"], header("3")) {
		t.Errorf("txn: %d %v", code, txn)
	}
	if rs, _ := txn["responses"].([]any); len(rs) != 1 || rs[0].(map[string]any)["response_put"] == nil {
		t.Errorf("txn responses: %v", txn["responses"])
	}
	expectJSON(t, base, "/v3beta/kv/range", `{"key":"Zm9v","keys_only":true}`, map[string]any{
		"header": header("3"), "count": "1",
		"kvs": []any{map[string]any{"key": "Zm9v", "create_revision": "2", "mod_revision": "3", "version": "2"}},
	})
	expectJSON(t, base, "/v3/kv/deleterange", `{"key":"Zm9v","unknown_field":1}`,
		map[string]any{"header": header("4"), "deleted": "1"})
	expectJSON(t, base, "/v3/kv/compaction", `{"revision":"3","physical":true}`,
		map[string]any{"header": header("4")})
	testGatewayLease(t, base)
	testGatewayStatus(t, base)
	testGatewayErrors(t, base)
}

func testGatewayLease(t *testing.T, base string) {
	t.Helper()
	code, grant := post(t, base+"/v3/lease/grant", `{"TTL":60}`, nil)
	maskIDs(t, grant)
	id, _ := grant["ID"].(string)
	if code != http.StatusOK || !decimal.MatchString(id) || grant["TTL"] != "60" {
		t.Fatalf("lease grant: %d %v", code, grant)
	}
	code, ttl := post(t, base+"/v3/lease/timetolive", fmt.Sprintf(`{"ID":%q}`, id), nil)
	if code != http.StatusOK || ttl["ID"] != id || ttl["grantedTTL"] != "60" {
		t.Errorf("lease timetolive: %d %v", code, ttl)
	}
}

func testGatewayStatus(t *testing.T, base string) {
	t.Helper()
	code, st := post(t, base+"/v3/maintenance/status", `{}`, nil)
	maskIDs(t, st)
	for _, k := range []string{"header", "version", "dbSize", "leader", "raftIndex", "raftTerm", "raftAppliedIndex", "dbSizeInUse"} {
		if st[k] == nil {
			t.Errorf("status has no %q: %v", k, st)
		}
	}
	if _, ok := st["isLearner"]; code != http.StatusOK || ok {
		t.Errorf("status: %d %v (unset fields must be left out)", code, st)
	}
}

func testGatewayErrors(t *testing.T, base string) {
	t.Helper()
	code, got := post(t, base+"/v3/kv/put", `{"value":"YmFy"}`, nil)
	want := map[string]any{"code": 3.0, "message": "etcdserver: key is not provided"}
	if code != http.StatusBadRequest || !reflect.DeepEqual(got, want) {
		t.Errorf("put without key: %d %v, want 400 %v", code, got, want)
	}
	code, got = post(t, base+"/v3/kv/range", `{"key":`, nil)
	if code != http.StatusBadRequest || got["code"] != 3.0 {
		t.Errorf("malformed JSON: %d %v", code, got)
	}
	code, got = post(t, base+"/v3/auth/status", `{}`, nil)
	if code != http.StatusOK || got["authRevision"] != "1" {
		t.Errorf("auth status: %d %v", code, got)
	}
}

// fakeServices answer the gateway's calls without a member: Range reports
// the token it was given, Watch replays a fixed stream.
type fakeServices struct {
	pb.UnimplementedKVServer
	pb.UnimplementedWatchServer

	mu     sync.Mutex
	tokens []string // "token" metadata per Range
}

func (f *fakeServices) Range(ctx context.Context, _ *pb.RangeRequest) (*pb.RangeResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.tokens = append(f.tokens, strings.Join(md.Get("token"), ","))
	f.mu.Unlock()
	return &pb.RangeResponse{Header: &pb.ResponseHeader{Revision: 7}}, nil
}

func (f *fakeServices) Watch(s pb.Watch_WatchServer) error {
	req, err := s.Recv()
	if err != nil {
		return err
	}
	key := req.GetCreateRequest().GetKey()
	if err := s.Send(&pb.WatchResponse{Header: &pb.ResponseHeader{Revision: 1}, Created: true}); err != nil {
		return err
	}
	ev := &mvccpb.Event{Kv: &mvccpb.KeyValue{Key: key, Value: []byte("bar"), CreateRevision: 2, ModRevision: 2, Version: 1}}
	if err := s.Send(&pb.WatchResponse{Header: &pb.ResponseHeader{Revision: 2}, Events: []*mvccpb.Event{ev}}); err != nil {
		return err
	}
	return status.Error(codes.Unavailable, "fake: stream ends")
}

// startFake serves the gateway over a gRPC server with fakeServices.
func startFake(t *testing.T) (*fakeServices, string) {
	t.Helper()
	f := &fakeServices{}
	gs := grpc.NewServer()
	pb.RegisterKVServer(gs, f)
	pb.RegisterWatchServer(gs, f)
	g, err := httpapi.NewGateway(gs)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(httpapi.WithGateway(g, http.NotFoundHandler()))
	t.Cleanup(func() {
		hs.Close()
		gs.Stop()
		g.Close()
	})
	return f, hs.URL
}

func TestGatewayAuthorizationToken(t *testing.T) {
	f, base := startFake(t)
	for _, auth := range []string{"", "tok1", "Bearer tok2"} {
		h := http.Header{}
		if auth != "" {
			h.Set("Authorization", auth)
		}
		if code, got := post(t, base+"/v3/kv/range", `{"key":"Zm9v"}`, h); code != http.StatusOK {
			t.Fatalf("range: %d %v", code, got)
		}
	}
	want := []string{"", "tok1", "tok2"}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !reflect.DeepEqual(f.tokens, want) {
		t.Errorf("token metadata %q, want %q", f.tokens, want)
	}
}

// TestGatewayWatchStream checks /v3/watch: one JSON object per line, each
// response as {"result":...}, a failure as {"error":...}.
func TestGatewayWatchStream(t *testing.T) {
	_, base := startFake(t)
	resp, err := http.Post(base+"/v3/watch", "application/json", strings.NewReader(`{"create_request":{"key":"Zm9v"}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []map[string]any
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	want := []map[string]any{
		{"result": map[string]any{"header": map[string]any{"revision": "1"}, "created": true}},
		{"result": map[string]any{"header": map[string]any{"revision": "2"}, "events": []any{
			map[string]any{"kv": map[string]any{"key": "Zm9v", "value": "YmFy",
				"create_revision": "2", "mod_revision": "2", "version": "1"}}}}},
		{"error": map[string]any{"code": float64(codes.Unavailable), "message": "fake: stream ends"}},
	}
	if resp.StatusCode != http.StatusOK || !reflect.DeepEqual(lines, want) {
		t.Errorf("watch stream: %d\n got %v\nwant %v", resp.StatusCode, lines, want)
	}
}

func TestGatewayOtherPaths(t *testing.T) {
	_, base := startFake(t)
	resp, err := http.Get(base + "/version")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("non-gateway path: %d, want the wrapped handler's 404", resp.StatusCode)
	}
	code, got := post(t, base+"/v3beta/kv/range", `{}`, nil)
	if code != http.StatusOK || !reflect.DeepEqual(got, map[string]any{"header": map[string]any{"revision": "7"}}) {
		t.Errorf("/v3beta/: %d %v", code, got)
	}
}
