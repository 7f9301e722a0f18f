package metrics

import (
	"context"
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// scrape renders the default registry as /metrics does.
func scrape(t *testing.T) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// value is the sample of series (name with its labels in the exposition's
// order) in a scrape, or -1e9 when it is absent.
func value(t *testing.T, series string) float64 {
	t.Helper()
	for line := range strings.SplitSeq(scrape(t), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	return -1e9
}

func TestEtcdNamesAndTypes(t *testing.T) {
	SetServerID(0xabc)
	SetServerVersion("3.7.1")
	want := map[string]string{
		"etcd_server_has_leader":                    "gauge",
		"etcd_server_is_leader":                     "gauge",
		"etcd_server_is_learner":                    "gauge",
		"etcd_server_leader_changes_seen_total":     "counter",
		"etcd_server_proposals_committed_total":     "gauge",
		"etcd_server_proposals_applied_total":       "gauge",
		"etcd_server_proposals_pending":             "gauge",
		"etcd_server_proposals_failed_total":        "counter",
		"etcd_server_quota_backend_bytes":           "gauge",
		"etcd_server_id":                            "gauge",
		"etcd_server_version":                       "gauge",
		"etcd_server_go_version":                    "gauge",
		"etcd_disk_wal_fsync_duration_seconds":      "histogram",
		"etcd_disk_wal_write_bytes_total":           "gauge",
		"etcd_disk_backend_commit_duration_seconds": "histogram",
		"etcd_mvcc_db_total_size_in_bytes":          "gauge",
		"etcd_mvcc_db_total_size_in_use_in_bytes":   "gauge",
		"etcd_debugging_mvcc_keys_total":            "gauge",
		"etcd_debugging_mvcc_current_revision":      "gauge",
		"etcd_debugging_mvcc_compact_revision":      "gauge",
		"etcd_mvcc_put_total":                       "counter",
		"etcd_mvcc_range_total":                     "counter",
		"etcd_mvcc_delete_total":                    "counter",
		"etcd_mvcc_txn_total":                       "counter",
	}
	text := scrape(t)
	for name, typ := range want {
		if !strings.Contains(text, "# TYPE "+name+" "+typ+"\n") {
			t.Errorf("%s is not exported as a %s", name, typ)
		}
	}
	for _, series := range []string{
		`etcd_disk_wal_fsync_duration_seconds_bucket{le="0.001"}`,
		`etcd_disk_wal_fsync_duration_seconds_bucket{le="8.192"}`,
		`etcd_disk_backend_commit_duration_seconds_bucket{le="0.001"}`,
		`etcd_server_id{server_id="abc"}`,
		`etcd_server_version{server_version="3.7.1"}`,
	} {
		if value(t, series) == -1e9 {
			t.Errorf("%s is missing", series)
		}
	}
}

func TestSetLeader(t *testing.T) {
	before := value(t, "etcd_server_leader_changes_seen_total")
	SetLeader(0, 1, true)
	if value(t, "etcd_server_has_leader") != 0 || value(t, "etcd_server_is_leader") != 0 || value(t, "etcd_server_leader_changes_seen_total") != before {
		t.Fatal("no leader: want has_leader 0, is_leader 0, no change counted")
	}
	SetLeader(2, 1, true)
	if value(t, "etcd_server_has_leader") != 1 || value(t, "etcd_server_is_leader") != 0 || value(t, "etcd_server_leader_changes_seen_total") != before+1 {
		t.Fatal("other leader: want has_leader 1, is_leader 0, one change")
	}
	SetLeader(1, 1, true)
	if value(t, "etcd_server_is_leader") != 1 || value(t, "etcd_server_leader_changes_seen_total") != before+2 {
		t.Fatal("self leader: want is_leader 1, two changes")
	}
}

type fakeSource struct{}

func (fakeSource) DBSize() int64      { return 4096 }
func (fakeSource) DBSizeInUse() int64 { return 2048 }
func (fakeSource) Rev() int64         { return 7 }
func (fakeSource) CompactRev() int64  { return -1 }
func (fakeSource) Keys() int          { return 3 }
func (fakeSource) WatchBacklog() (int, int) {
	return 2, 5
}
func (fakeSource) ClusterVersion() string { return "3.7.0" }
func (fakeSource) AuthRevision() uint64   { return 4 }

func TestSource(t *testing.T) {
	SetSource(fakeSource{})
	defer SetSource(nil)
	for series, want := range map[string]float64{
		"etcd_mvcc_db_total_size_in_bytes": 4096, "etcd_mvcc_db_total_size_in_use_in_bytes": 2048,
		"etcd_debugging_mvcc_current_revision": 7, "etcd_debugging_mvcc_compact_revision": -1, "etcd_debugging_mvcc_keys_total": 3,
		"etcd_debugging_mvcc_slow_watcher_total": 2, "etcd_debugging_mvcc_pending_events_total": 5,
		`etcd_cluster_version{cluster_version="3.7"}`: 1, "etcd_debugging_auth_revision": 4,
	} {
		if got := value(t, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	SetSource(nil)
	if got := value(t, "etcd_debugging_mvcc_keys_total"); got != 0 {
		t.Errorf("detached keys gauge = %v, want 0", got)
	}
}

type fakeStream struct {
	grpc.ServerStream
	recv int
}

func (*fakeStream) Context() context.Context     { return context.Background() }
func (*fakeStream) SetHeader(metadata.MD) error  { return nil }
func (*fakeStream) SendHeader(metadata.MD) error { return nil }
func (*fakeStream) SetTrailer(metadata.MD)       {}
func (*fakeStream) SendMsg(any) error            { return nil }
func (s *fakeStream) RecvMsg(any) error {
	if s.recv == 0 {
		return errors.New("EOF")
	}
	s.recv--
	return nil
}

func TestGRPCInterceptors(t *testing.T) {
	EnableExtensive()
	const unary, stream = "/test.Svc/Get", "/test.Svc/Follow"
	handled := func(method, code string) float64 {
		name := strings.TrimPrefix(method, "/test.Svc/")
		return value(t, `grpc_server_handled_total{grpc_code="`+code+`",grpc_method="`+name+`",grpc_service="test.Svc",grpc_type="`+typeOf(method)+`"}`)
	}
	for range 3 {
		UnaryServerInterceptor(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: unary},
			func(context.Context, any) (any, error) { return "ok", nil })
	}
	UnaryServerInterceptor(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: unary},
		func(context.Context, any) (any, error) { return nil, status.Error(codes.NotFound, "nope") })
	if got := value(t, `grpc_server_started_total{grpc_method="Get",grpc_service="test.Svc",grpc_type="unary"}`); got != 4 {
		t.Errorf("started = %v, want 4", got)
	}
	if got := handled(unary, "OK"); got != 3 {
		t.Errorf("handled OK = %v, want 3", got)
	}
	if got := handled(unary, "NotFound"); got != 1 {
		t.Errorf("handled NotFound = %v, want 1", got)
	}
	if got := value(t, `grpc_server_msg_sent_total{grpc_method="Get",grpc_service="test.Svc",grpc_type="unary"}`); got != 3 {
		t.Errorf("sent = %v, want 3", got)
	}
	if got := value(t, `grpc_server_msg_received_total{grpc_method="Get",grpc_service="test.Svc",grpc_type="unary"}`); got != 4 {
		t.Errorf("received = %v, want 4", got)
	}

	ss := &fakeStream{recv: 2}
	StreamServerInterceptor(nil, ss, &grpc.StreamServerInfo{FullMethod: stream, IsClientStream: true, IsServerStream: true},
		func(_ any, s grpc.ServerStream) error {
			for s.RecvMsg(nil) == nil {
				s.SendMsg(nil)
			}
			return status.Error(codes.Canceled, "bye")
		})
	if got := value(t, `grpc_server_msg_received_total{grpc_method="Follow",grpc_service="test.Svc",grpc_type="bidi_stream"}`); got != 2 {
		t.Errorf("stream received = %v, want 2", got)
	}
	if got := value(t, `grpc_server_msg_sent_total{grpc_method="Follow",grpc_service="test.Svc",grpc_type="bidi_stream"}`); got != 2 {
		t.Errorf("stream sent = %v, want 2", got)
	}
	if got := handled(stream, "Canceled"); got != 1 {
		t.Errorf("stream handled Canceled = %v, want 1", got)
	}
	if got := value(t, `grpc_server_handling_seconds_count{grpc_method="Get",grpc_service="test.Svc",grpc_type="unary"}`); got != 4 {
		t.Errorf("handling histogram count = %v, want 4", got)
	}
}

func typeOf(method string) string {
	if strings.HasSuffix(method, "Follow") {
		return "bidi_stream"
	}
	return "unary"
}

func TestInitGRPCServer(t *testing.T) {
	gs := grpc.NewServer()
	gs.RegisterService(&grpc.ServiceDesc{
		ServiceName: "init.Svc", HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Ping", Handler: func(any, context.Context, func(any) error, grpc.UnaryServerInterceptor) (any, error) { return nil, nil }}},
		Streams: []grpc.StreamDesc{{StreamName: "Watch", ServerStreams: true, Handler: func(any, grpc.ServerStream) error { return nil }}},
	}, struct{}{})
	InitGRPCServer(gs)
	text := scrape(t)
	found := strings.Count(text, `grpc_service="init.Svc"`)
	if !strings.Contains(text, `grpc_server_handled_total{grpc_code="Unavailable",grpc_method="Watch",grpc_service="init.Svc",grpc_type="server_stream"} 0`) {
		t.Error("Watch's handled series is not pre-created as a server_stream")
	}
	// started, received and sent once per method, handled per code.
	want := 2 * (3 + numCodes)
	if Extensive() { // the handling histogram: buckets, +Inf, sum and count
		want += 2 * (len(grpcBuckets) + 3)
	}
	if found != want {
		t.Errorf("pre-created %d series for init.Svc, want %d", found, want)
	}
}

func BenchmarkUnaryInterceptor(b *testing.B) {
	info := &grpc.UnaryServerInfo{FullMethod: "/bench.Svc/Put"}
	handler := func(context.Context, any) (any, error) { return nil, nil }
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			UnaryServerInterceptor(ctx, nil, info, handler)
		}
	})
}

// TestClientRequestsByAnnouncedVersion: a call is counted under the API
// version its client announced, "unknown" without one.
func TestClientRequestsByAnnouncedVersion(t *testing.T) {
	series := func(ver string) string {
		return `etcd_server_client_requests_total{client_api_version="` + ver + `",type="unary"}`
	}
	tests := []struct {
		name string
		ctx  context.Context
		ver  string // the series that must grow by one
	}{
		{"announced", metadata.NewIncomingContext(context.Background(), metadata.Pairs(clientAPIVersionKey, "3.7")), "3.7"},
		{"not announced", metadata.NewIncomingContext(context.Background(), metadata.Pairs("other", "x")), "unknown"},
		{"no metadata", context.Background(), "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := map[string]float64{"3.7": value(t, series("3.7")), "unknown": value(t, series("unknown"))}
			countClientRequest(tt.ctx, "unary")
			for ver, was := range before {
				want := max(was, 0)
				if ver == tt.ver {
					want++
				}
				if got := max(value(t, series(ver)), 0); got != want {
					t.Errorf("%s = %v, want %v", series(ver), got, want)
				}
			}
		})
	}
}
