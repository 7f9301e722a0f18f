package dashboard_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/server/config"
)

// clusterAnswer is the part of /ui/api/cluster the tests read.
type clusterAnswer struct {
	Leader     string `json:"leader"`
	FromLeader bool   `json:"fromLeader"`
	Members    []struct {
		ID, Name, Role, Error string
		Self, Reachable       bool
		TokenRefused          bool
		Healthy               bool
		Term, Index           uint64
		DBSize                int64 `json:"dbSize"`
		Version               string
		Progress              *struct {
			Match uint64
			State string
		}
	} `json:"members"`
}

func TestNoFlagServesNothing(t *testing.T) {
	tm := startCluster(t, 1, func(c *config.Config) { c.Dashboard = false })[0]
	for _, path := range []string{"/ui/", "/ui/index.html", "/ui/app.js", "/ui/api/cluster", "/ui/api/metrics", "/ui/api/history?key=YQ==", "/ui"} {
		if a := call(t, http.MethodGet, tm.clientURL+path, ""); a.status != http.StatusNotFound {
			t.Errorf("GET %s without the flag: %d %s, want 404", path, a.status, a.body)
		}
	}
	if a := call(t, http.MethodPost, tm.clientURL+"/ui/api/snapshot", ""); a.status != http.StatusNotFound {
		t.Errorf("POST snapshot without the flag: %d, want 404", a.status)
	}
}

func TestFlagNeedsGateway(t *testing.T) {
	cfg := config.NewConfig()
	cfg.Dashboard, cfg.EnableGRPCGateway = true, false
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--enable-grpc-gateway") {
		t.Fatalf("Validate = %v, want the gateway named", err)
	}
}

func TestAssets(t *testing.T) {
	tm := startCluster(t, 1, nil)[0]
	tests := []struct{ path, contentType, contains string }{
		{"/ui/", "text/html", "cairn dashboard"},
		{"/ui/app.js", "text/javascript", "session"},
		{"/ui/style.css", "text/css", ".badge"},
	}
	for _, tt := range tests {
		a := call(t, http.MethodGet, tm.clientURL+tt.path, "")
		if a.status != http.StatusOK || !strings.HasPrefix(a.header.Get("Content-Type"), tt.contentType) || !bytes.Contains(a.body, []byte(tt.contains)) {
			t.Errorf("GET %s: %d %q, want 200 %s containing %q", tt.path, a.status, a.header.Get("Content-Type"), tt.contentType, tt.contains)
		}
		if csp := a.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q allows other origins", tt.path, csp)
		}
	}
	if a := call(t, http.MethodGet, tm.clientURL+"/ui/api/nothing", ""); a.status != http.StatusNotFound {
		t.Errorf("unknown endpoint: %d, want 404", a.status)
	}
	if a := call(t, http.MethodPost, tm.clientURL+"/ui/api/cluster", ""); a.status != http.StatusMethodNotAllowed {
		t.Errorf("POST cluster: %d, want 405", a.status)
	}
}

func TestClusterEndpoint(t *testing.T) {
	members := startCluster(t, 3, nil)
	var view clusterAnswer
	// Wait until member 0 has a leader and has applied every member's
	// publication of its client URLs (they are unknown until then).
	deadline := time.Now().Add(readyTimeout)
	for {
		call(t, http.MethodGet, members[0].clientURL+"/ui/api/cluster", "").json(t, &view)
		if view.Leader != "0" && allReachable(view) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(view.Members) != 3 {
		t.Fatalf("members = %+v, want 3", view.Members)
	}
	var leaderURL string
	leaders := 0
	for i, m := range view.Members {
		if !m.Reachable || !m.Healthy || m.Term == 0 || m.Index == 0 || m.DBSize == 0 || m.Version == "" {
			t.Errorf("member %d = %+v, want reachable and healthy with its status", i, m)
		}
		if m.Role == "leader" {
			leaders++
			if m.ID != view.Leader {
				t.Errorf("leader row %s, cluster leader %s", m.ID, view.Leader)
			}
			for _, tm := range members {
				if tm.name == m.Name {
					leaderURL = tm.clientURL
				}
			}
		}
	}
	if leaders != 1 {
		t.Fatalf("%d leaders in %+v", leaders, view.Members)
	}
	var fromLeader clusterAnswer
	call(t, http.MethodGet, leaderURL+"/ui/api/cluster", "").json(t, &fromLeader)
	if !fromLeader.FromLeader {
		t.Fatal("the leader's answer does not say it comes from the leader")
	}
	for _, m := range fromLeader.Members {
		if m.Progress == nil || m.Progress.Match == 0 || !strings.HasPrefix(m.Progress.State, "State") {
			t.Errorf("leader's progress of %s = %+v, want its match and state", m.Name, m.Progress)
		}
	}

	// A stopped member is shown unreachable by the others.
	var victim *testMember
	for _, tm := range members {
		if tm.clientURL != leaderURL {
			victim = tm
			break
		}
	}
	victim.stop()
	call(t, http.MethodGet, leaderURL+"/ui/api/cluster", "").json(t, &view)
	for _, m := range view.Members {
		if want := m.Name != victim.name; m.Reachable != want {
			t.Errorf("%s reachable = %v (%s), want %v", m.Name, m.Reachable, m.Error, want)
		}
		if m.Name == victim.name && (m.Healthy || !strings.Contains(m.Error, "unreachable")) {
			t.Errorf("stopped member = %+v, want unhealthy and unreachable", m)
		}
	}
}

func allReachable(v clusterAnswer) bool {
	for _, m := range v.Members {
		if !m.Reachable {
			return false
		}
	}
	return true
}

func TestHistoryEndpoint(t *testing.T) {
	tm := startCluster(t, 1, nil)[0]
	conn := grpcConn(t, tm.clientURL)
	ctx := context.Background()
	put(t, ctx, conn, "k", "v1")
	put(t, ctx, conn, "other", "x")
	put(t, ctx, conn, "k", "v2")
	if _, err := pb.NewKVClient(conn).DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	last := put(t, ctx, conn, "k", "v3")

	type version struct {
		Type        string
		ModRevision int64
		Version     int64
		Value       string
	}
	var hv struct {
		CompactRevision int64
		Versions        []version
	}
	history := func() {
		t.Helper()
		a := call(t, http.MethodGet, tm.clientURL+"/ui/api/history?key="+base64.StdEncoding.EncodeToString([]byte("k")), "")
		if a.status != http.StatusOK {
			t.Fatalf("history: %d %s", a.status, a.body)
		}
		a.json(t, &hv)
	}
	history()
	want := []struct {
		typ, value string
		version    int64
	}{{"PUT", "v3", 1}, {"DELETE", "", 0}, {"PUT", "v2", 2}, {"PUT", "v1", 1}}
	if len(hv.Versions) != len(want) || hv.CompactRevision != 0 || hv.Versions[0].ModRevision != last {
		t.Fatalf("history = %+v, want %d versions newest first from revision %d", hv, len(want), last)
	}
	for i, w := range want {
		got := hv.Versions[i]
		value, _ := base64.StdEncoding.DecodeString(got.Value)
		if got.Type != w.typ || string(value) != w.value || got.Version != w.version {
			t.Errorf("version %d = %+v (%q), want %+v", i, got, value, w)
		}
	}

	// After a compaction only what it kept is shown (the compaction
	// revision itself is kept: the delete), and where it cut.
	if _, err := pb.NewKVClient(conn).Compact(ctx, &pb.CompactionRequest{Revision: last - 1, Physical: true}); err != nil {
		t.Fatal(err)
	}
	history()
	if hv.CompactRevision != last-1 || len(hv.Versions) != 2 || hv.Versions[0].ModRevision != last || hv.Versions[1].Type != "DELETE" {
		t.Errorf("history after compacting at %d = %+v, want the compaction point, the delete and the last put", last-1, hv)
	}

	for _, q := range []string{"", "?key=", "?key=%%%"} {
		if a := call(t, http.MethodGet, tm.clientURL+"/ui/api/history"+q, ""); a.status != http.StatusBadRequest {
			t.Errorf("history%s: %d, want 400", q, a.status)
		}
	}
}

func TestMetricsEndpoint(t *testing.T) {
	tm := startCluster(t, 1, nil)[0]
	var m struct {
		IntervalMs int64
		Points     []map[string]float64
	}
	// The first sample is taken at start; the first point after one more
	// interval (2 s). The deadline only keeps a broken sampler from
	// hanging the test.
	deadline := time.Now().Add(readyTimeout)
	for len(m.Points) == 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		call(t, http.MethodGet, tm.clientURL+"/ui/api/metrics", "").json(t, &m)
	}
	if m.IntervalMs != 2000 || len(m.Points) == 0 {
		t.Fatalf("metrics = %+v, want points every 2000 ms", m)
	}
	p := m.Points[len(m.Points)-1]
	for _, k := range []string{"t", "writesPerSec", "readsPerSec", "watchEventsPerSec", "walFsyncP99", "backendCommitP99", "proposalsPending", "proposalsFailed", "dbSize", "leaderChanges"} {
		if _, ok := p[k]; !ok {
			t.Errorf("point %v lacks %s", p, k)
		}
	}
	if p["dbSize"] <= 0 || p["leaderChanges"] < 1 {
		t.Errorf("point %v: want the db size and the election that made the leader", p)
	}
}

func TestSnapshotEndpoint(t *testing.T) {
	tm := startCluster(t, 1, nil)[0]
	put(t, context.Background(), grpcConn(t, tm.clientURL), "k", "v")
	a := call(t, http.MethodPost, tm.clientURL+"/ui/api/snapshot", "")
	if a.status != http.StatusOK || a.header.Get("Content-Type") != "application/octet-stream" || !strings.Contains(a.header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("snapshot: %d %v", a.status, a.header)
	}
	// A bbolt file: its meta page carries the magic 0xED0CDAED.
	if len(a.body) < 4096 || !bytes.Contains(a.body[:4096], []byte{0xed, 0xda, 0x0c, 0xed}) {
		t.Errorf("snapshot of %d bytes is not a bbolt database", len(a.body))
	}
	if a := call(t, http.MethodGet, tm.clientURL+"/ui/api/snapshot", ""); a.status != http.StatusMethodNotAllowed {
		t.Errorf("GET snapshot: %d, want 405", a.status)
	}
}

// TestEndpointsUnderAuth checks every endpoint with no token, with a user
// allowed only keys under a/ and with root: each answers as the gRPC call
// it is made of answers that user.
func TestEndpointsUnderAuth(t *testing.T) {
	tm := startCluster(t, 1, nil)[0]
	conn := grpcConn(t, tm.clientURL)
	ctx := context.Background()
	put(t, ctx, conn, "a/1", "mine")
	put(t, ctx, conn, "b/1", "theirs")
	enableAuth(t, ctx, conn)
	rootTok, aliceTok := token(t, ctx, conn, "root", "rootpw"), token(t, ctx, conn, "alice", "alicepw")
	keyA, keyB := base64.StdEncoding.EncodeToString([]byte("a/1")), base64.StdEncoding.EncodeToString([]byte("b/1"))

	tests := []struct {
		name, method, path, token string
		status                    int
		message                   string
	}{
		{"cluster without token", "GET", "/ui/api/cluster", "", http.StatusBadRequest, "user name is empty"},
		{"cluster with a bad token", "GET", "/ui/api/cluster", "nonsense", http.StatusUnauthorized, "invalid auth token"},
		{"cluster as alice", "GET", "/ui/api/cluster", aliceTok, http.StatusOK, ""},
		{"cluster as root", "GET", "/ui/api/cluster", rootTok, http.StatusOK, ""},
		{"history without token", "GET", "/ui/api/history?key=" + keyA, "", http.StatusBadRequest, "user name is empty"},
		{"history of her key as alice", "GET", "/ui/api/history?key=" + keyA, aliceTok, http.StatusOK, ""},
		{"history of another key as alice", "GET", "/ui/api/history?key=" + keyB, aliceTok, http.StatusForbidden, "permission denied"},
		{"history as root", "GET", "/ui/api/history?key=" + keyB, rootTok, http.StatusOK, ""},
		{"snapshot without token", "POST", "/ui/api/snapshot", "", http.StatusBadRequest, "user name is empty"},
		{"snapshot as alice", "POST", "/ui/api/snapshot", aliceTok, http.StatusForbidden, "permission denied"},
		{"snapshot as root", "POST", "/ui/api/snapshot", rootTok, http.StatusOK, ""},
		// The graphs show what /metrics shows, which etcd serves to anyone.
		{"metrics without token", "GET", "/ui/api/metrics", "", http.StatusOK, ""},
		// The page itself holds no data.
		{"page without token", "GET", "/ui/", "", http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, tt.method, tm.clientURL+tt.path, tt.token)
			if a.status != tt.status || !bytes.Contains(a.body, []byte(tt.message)) {
				t.Errorf("%d %s, want %d with %q", a.status, a.body, tt.status, tt.message)
			}
		})
	}
}

// enableAuth adds root and alice (read-write on the prefix a/) and turns
// auth on.
func enableAuth(t *testing.T, ctx context.Context, conn *grpc.ClientConn) {
	t.Helper()
	ac := pb.NewAuthClient(conn)
	steps := []func() error{
		func() error {
			_, err := ac.UserAdd(ctx, &pb.AuthUserAddRequest{Name: "root", Password: "rootpw"})
			return err
		},
		func() error {
			_, err := ac.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: "root", Role: "root"})
			return err
		},
		func() error { _, err := ac.RoleAdd(ctx, &pb.AuthRoleAddRequest{Name: "a-only"}); return err },
		func() error {
			_, err := ac.RoleGrantPermission(ctx, &pb.AuthRoleGrantPermissionRequest{Name: "a-only",
				Perm: &authpb.Permission{PermType: authpb.READWRITE, Key: []byte("a/"), RangeEnd: []byte("a0")}})
			return err
		},
		func() error {
			_, err := ac.UserAdd(ctx, &pb.AuthUserAddRequest{Name: "alice", Password: "alicepw"})
			return err
		},
		func() error {
			_, err := ac.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: "alice", Role: "a-only"})
			return err
		},
		func() error { _, err := ac.AuthEnable(ctx, &pb.AuthEnableRequest{}); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("auth setup step %d: %v", i, err)
		}
	}
}

// token authenticates a user.
func token(t *testing.T, ctx context.Context, conn *grpc.ClientConn, user, password string) string {
	t.Helper()
	resp, err := pb.NewAuthClient(conn).Authenticate(ctx, &pb.AuthenticateRequest{Name: user, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Token
}

// TestAccessControl checks that the dashboard sits behind the gateway's
// --host-whitelist and --cors rules.
func TestAccessControl(t *testing.T) {
	tm := startCluster(t, 1, func(c *config.Config) {
		c.HostWhitelist = []string{"cairn.example"}
		c.CORS = []string{"https://ops.example"}
	})[0]
	tests := []struct {
		name, host, origin string
		status             int
		allowOrigin        string
	}{
		{"whitelisted host", "cairn.example", "", http.StatusOK, ""},
		{"other host", "evil.example", "", http.StatusMisdirectedRequest, ""},
		{"allowed origin", "cairn.example", "https://ops.example", http.StatusOK, "https://ops.example"},
		{"other origin", "cairn.example", "https://evil.example", http.StatusOK, ""},
	}
	for _, tt := range tests {
		for _, path := range []string{"/ui/", "/ui/api/cluster"} {
			req, err := http.NewRequest(http.MethodGet, tm.clientURL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tt.host
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status || resp.Header.Get("Access-Control-Allow-Origin") != tt.allowOrigin {
				t.Errorf("%s, GET %s: %d with Access-Control-Allow-Origin %q, want %d and %q", tt.name, path, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), tt.status, tt.allowOrigin)
			}
		}
	}
}

// TestClusterEndpointUnderAuth checks the cluster view under auth with
// three members: the caller's token is passed on to the other members,
// which accept it (simple tokens are assigned through raft), so every row
// has its status; without a token there is no view at all.
func TestClusterEndpointUnderAuth(t *testing.T) {
	members := startCluster(t, 3, nil)
	conn := grpcConn(t, members[0].clientURL)
	ctx := context.Background()
	enableAuth(t, ctx, conn)
	tok := token(t, ctx, conn, "alice", "alicepw")
	var view clusterAnswer
	for deadline := time.Now().Add(readyTimeout); ; time.Sleep(50 * time.Millisecond) {
		a := call(t, http.MethodGet, members[0].clientURL+"/ui/api/cluster", tok)
		if a.status != http.StatusOK {
			t.Fatalf("cluster as alice: %d %s", a.status, a.body)
		}
		a.json(t, &view)
		if allReachable(view) || time.Now().After(deadline) {
			break
		}
	}
	if len(view.Members) != 3 {
		t.Fatalf("members = %+v, want 3", view.Members)
	}
	for _, m := range view.Members {
		if !m.Reachable || m.TokenRefused || !m.Healthy || m.Term == 0 {
			t.Errorf("row = %+v, want its status", m)
		}
	}
	if a := call(t, http.MethodGet, members[1].clientURL+"/ui/api/cluster", ""); a.status == http.StatusOK {
		t.Errorf("cluster without a token on another member: %d %s", a.status, a.body)
	}
}

// TestMoveLeaderEndpoint moves the leadership from a follower's dashboard
// (the call goes to the leader) and checks who may.
func TestMoveLeaderEndpoint(t *testing.T) {
	members := startCluster(t, 3, nil)
	var view clusterAnswer
	deadline := time.Now().Add(readyTimeout)
	for view.Leader == "" || view.Leader == "0" || !allReachable(view) {
		if time.Now().After(deadline) {
			t.Fatalf("no leader, or not every member published: %+v", view)
		}
		call(t, http.MethodGet, members[0].clientURL+"/ui/api/cluster", "").json(t, &view)
	}
	var follower *testMember
	var target string
	for _, m := range view.Members {
		if m.Role != "follower" {
			continue
		}
		for _, tm := range members {
			if tm.name == m.Name && follower == nil {
				follower = tm
			} else if tm.name == m.Name {
				target = m.ID
			}
		}
	}
	// Ask the first follower's dashboard to hand over to the other one.
	a := call(t, http.MethodPost, follower.clientURL+"/ui/api/move-leader?target="+target, "")
	if a.status != http.StatusOK {
		t.Fatalf("move-leader: %d %s", a.status, a.body)
	}
	call(t, http.MethodGet, follower.clientURL+"/ui/api/cluster", "").json(t, &view)
	if view.Leader != target {
		t.Errorf("leader after the move = %s, want %s", view.Leader, target)
	}
	for _, q := range []string{"", "?target=x", "?target=0"} {
		if a := call(t, http.MethodPost, follower.clientURL+"/ui/api/move-leader"+q, ""); a.status != http.StatusBadRequest {
			t.Errorf("move-leader%s: %d, want 400", q, a.status)
		}
	}
	if a := call(t, http.MethodGet, follower.clientURL+"/ui/api/move-leader?target="+target, ""); a.status != http.StatusMethodNotAllowed {
		t.Errorf("GET move-leader: %d, want 405", a.status)
	}

	// Under auth only root may; alice's token is refused by the leader.
	conn := grpcConn(t, members[0].clientURL)
	ctx := context.Background()
	enableAuth(t, ctx, conn)
	alice, root := token(t, ctx, conn, "alice", "alicepw"), token(t, ctx, conn, "root", "rootpw")
	back := view.Members[0].ID
	if back == target {
		back = view.Members[1].ID
	}
	if a := call(t, http.MethodPost, follower.clientURL+"/ui/api/move-leader?target="+back, ""); a.status == http.StatusOK {
		t.Errorf("move-leader without a token: %d %s", a.status, a.body)
	}
	if a := call(t, http.MethodPost, follower.clientURL+"/ui/api/move-leader?target="+back, alice); a.status != http.StatusForbidden || !bytes.Contains(a.body, []byte("permission denied")) {
		t.Errorf("move-leader as alice: %d %s, want 403 permission denied", a.status, a.body)
	}
	if a := call(t, http.MethodPost, follower.clientURL+"/ui/api/move-leader?target="+back, root); a.status != http.StatusOK {
		t.Errorf("move-leader as root: %d %s", a.status, a.body)
	}
}
