package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/tests/harness"
)

// scrapeText GETs url/metrics.
func scrapeText(t testing.TB, url string) string {
	t.Helper()
	code, body := httpGet(t, url+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET %s/metrics = %d", url, code)
	}
	return body
}

func httpGet(t testing.TB, url string) (int, string) {
	t.Helper()
	return httpDo(t, http.MethodGet, url, "")
}

// exposition is a parsed scrape: series (name plus labels as printed) to
// value, and metric family to type.
type exposition struct {
	series map[string]float64
	types  map[string]string
}

func parseExposition(t testing.TB, text string) exposition {
	t.Helper()
	e := exposition{series: map[string]float64{}, types: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			e.types[name] = typ
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample %q: %v", line, err)
		}
		e.series[line[:i]] = v
	}
	return e
}

func (e exposition) get(t testing.TB, series string) float64 {
	t.Helper()
	v, ok := e.series[series]
	if !ok {
		t.Fatalf("series %s is missing from the scrape", series)
	}
	return v
}

const putHandledOK = `grpc_server_handled_total{grpc_code="OK",grpc_method="Put",grpc_service="etcdserverpb.KV",grpc_type="unary"}`

func TestMetricsMoveWithWork(t *testing.T) {
	m := startMember(t, memberOpts{})
	cli := m.client(t)
	mustPut(t, cli, "warmup", "v")
	before := parseExposition(t, scrapeText(t, m.clientURL))

	for _, name := range []string{"etcd_server_has_leader", "etcd_server_is_leader"} {
		if v := before.get(t, name); v != 1 {
			t.Errorf("%s = %v, want 1 on a one-member cluster", name, v)
		}
	}
	if v := before.get(t, "etcd_server_leader_changes_seen_total"); v < 1 {
		t.Errorf("leader_changes_seen_total = %v, want >= 1", v)
	}
	before.get(t, "etcd_server_proposals_pending")
	before.get(t, "etcd_server_proposals_failed_total")
	before.get(t, `grpc_server_handled_total{grpc_code="Unavailable",grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"}`)
	if _, ok := before.series[`grpc_server_handling_seconds_count{grpc_method="Put",grpc_service="etcdserverpb.KV",grpc_type="unary"}`]; ok {
		t.Error("grpc_server_handling_seconds is exported with --metrics basic; etcd exports it only with extensive")
	}
	for name, typ := range map[string]string{
		"etcd_disk_wal_fsync_duration_seconds":      "histogram",
		"etcd_disk_backend_commit_duration_seconds": "histogram",
		"etcd_server_proposals_committed_total":     "gauge",
		"grpc_server_handled_total":                 "counter",
	} {
		if before.types[name] != typ {
			t.Errorf("%s has type %q, want %q", name, before.types[name], typ)
		}
	}

	const n = 20
	for i := range n {
		mustPut(t, cli, fmt.Sprintf("key-%d", i), "v")
	}
	_, err := cli.Get(ctx(t), "key-0")
	must(t, err)
	if _, err := cli.Get(ctx(t), "x", clientv3.WithRev(1_000_000)); err == nil {
		t.Fatal("a get at a future revision succeeded")
	}

	// The backend commits every --backend-batch-interval (100ms): poll.
	var after exposition
	deadline := time.Now().Add(5 * time.Second)
	for {
		after = parseExposition(t, scrapeText(t, m.clientURL))
		if after.get(t, "etcd_disk_backend_commit_duration_seconds_count") > before.get(t, "etcd_disk_backend_commit_duration_seconds_count") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	grew := func(series string, by float64) {
		t.Helper()
		if b, a := before.get(t, series), after.get(t, series); a-b < by {
			t.Errorf("%s went from %v to %v, want a rise of at least %v", series, b, a, by)
		}
	}
	grew("etcd_server_proposals_committed_total", n)
	grew("etcd_server_proposals_applied_total", n)
	grew("etcd_disk_wal_fsync_duration_seconds_count", 1)
	grew("etcd_disk_wal_write_bytes_total", 1)
	grew("etcd_disk_backend_commit_duration_seconds_count", 1)
	grew("etcd_debugging_mvcc_keys_total", n)
	grew("etcd_debugging_mvcc_current_revision", n)
	grew("etcd_mvcc_put_total", n)
	grew("etcd_mvcc_range_total", 1)
	grew(putHandledOK, n)
	grew(`grpc_server_started_total{grpc_method="Put",grpc_service="etcdserverpb.KV",grpc_type="unary"}`, n)
	grew(`grpc_server_msg_received_total{grpc_method="Put",grpc_service="etcdserverpb.KV",grpc_type="unary"}`, n)
	grew(`grpc_server_handled_total{grpc_code="OutOfRange",grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"}`, 1)
	if v := after.get(t, "etcd_mvcc_db_total_size_in_bytes"); v <= 0 {
		t.Errorf("db_total_size_in_bytes = %v", v)
	}
	if v := after.get(t, "etcd_mvcc_db_total_size_in_use_in_bytes"); v <= 0 || v > after.get(t, "etcd_mvcc_db_total_size_in_bytes") {
		t.Errorf("db_total_size_in_use_in_bytes = %v", v)
	}
	if v := after.get(t, "etcd_server_proposals_pending"); v != 0 {
		t.Errorf("proposals_pending = %v with no request in flight", v)
	}
}

func TestMetricsExtensive(t *testing.T) {
	m := startMember(t, memberOpts{args: []string{"--metrics", "extensive"}})
	mustPut(t, m.client(t), "k", "v")
	e := parseExposition(t, scrapeText(t, m.clientURL))
	if v := e.get(t, `grpc_server_handling_seconds_count{grpc_method="Put",grpc_service="etcdserverpb.KV",grpc_type="unary"}`); v < 1 {
		t.Errorf("handling_seconds_count for Put = %v, want >= 1", v)
	}
	e.get(t, `grpc_server_handling_seconds_bucket{grpc_method="Put",grpc_service="etcdserverpb.KV",grpc_type="unary",le="0.005"}`)
}

func TestListenClientHTTPURLs(t *testing.T) {
	httpURL := harness.FreeURL(t)
	m := startMember(t, memberOpts{args: []string{"--listen-client-http-urls", httpURL}})
	mustPut(t, m.client(t), "k", "v") // gRPC on the client URL

	if code, body := httpGet(t, httpURL+"/health"); code != http.StatusOK || !strings.Contains(body, `"health":"true"`) {
		t.Errorf("GET /health on the HTTP URL = %d %s", code, body)
	}
	if code, _ := httpGet(t, httpURL+"/version"); code != http.StatusOK {
		t.Errorf("GET /version on the HTTP URL = %d", code)
	}
	if !strings.Contains(scrapeText(t, httpURL), putHandledOK) {
		t.Error("metrics on the HTTP URL do not count the put")
	}
	// The client URL serves gRPC only now.
	req, err := http.NewRequestWithContext(ctx(t), http.MethodGet, m.clientURL+"/health", nil)
	must(t, err)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("GET /health on the gRPC-only client URL = %d, want the connection closed", resp.StatusCode)
	}
}

func TestListenMetricsURLs(t *testing.T) {
	metricsURL := harness.FreeURL(t)
	m := startMember(t, memberOpts{args: []string{"--listen-metrics-urls", metricsURL}})
	mustPut(t, m.client(t), "k", "v")
	if !strings.Contains(scrapeText(t, metricsURL), putHandledOK) {
		t.Error("metrics URL does not count the put")
	}
	for _, path := range []string{"/health", "/livez", "/readyz"} {
		if code, body := httpGet(t, metricsURL+path); code != http.StatusOK {
			t.Errorf("GET %s on the metrics URL = %d %s", path, code, body)
		}
	}
	if code, _ := httpGet(t, metricsURL+"/version"); code != http.StatusNotFound {
		t.Errorf("GET /version on the metrics URL = %d, want 404", code)
	}
	// The client URL still serves everything.
	if code, _ := httpGet(t, m.clientURL+"/metrics"); code != http.StatusOK {
		t.Errorf("GET /metrics on the client URL = %d", code)
	}
}

func TestGRPCKeepaliveFlags(t *testing.T) {
	m := startMember(t, memberOpts{args: []string{
		"--grpc-keepalive-min-time", "1s", "--grpc-keepalive-interval", "30s", "--grpc-keepalive-timeout", "5s"}})
	mustPut(t, m.client(t), "k", "v")
}

func TestSystemdNotify(t *testing.T) {
	dir, err := os.MkdirTemp("", "sd") // short: unix socket paths are limited
	must(t, err)
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	must(t, err)
	defer conn.Close()
	m := startMember(t, memberOpts{env: []string{"NOTIFY_SOCKET=" + sock}})
	must(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	buf := make([]byte, 256)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no notification on NOTIFY_SOCKET: %v", err)
	}
	if got := string(buf[:n]); got != "READY=1" {
		t.Errorf("notification = %q, want READY=1", got)
	}
	mustPut(t, m.client(t), "k", "v")
}
