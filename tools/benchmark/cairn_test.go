package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/config"
	"github.com/cairnkv/cairn/server/embed"
)

// The commands added for issue 5 run here against a real cairn member,
// started in this process on first use and shared by the tests (each
// uses its own keys); TestMain stops it before checking for leaks.
var (
	memberOnce sync.Once
	member     *embed.Member
	memberDir  string
	memberURL  string
	memberErr  error
)

func cairnEndpoint(t *testing.T) string {
	t.Helper()
	memberOnce.Do(func() {
		memberDir, memberErr = os.MkdirTemp("", "benchmark-test")
		if memberErr == nil {
			member, memberURL, memberErr = startMember(memberDir)
		}
	})
	if memberErr != nil {
		t.Fatalf("starting a cairn member: %v", memberErr)
	}
	return memberURL
}

func stopMember() {
	if member != nil {
		member.Close()
	}
	if memberDir != "" {
		os.RemoveAll(memberDir)
	}
}

// startMember starts a single-member cluster, retrying on fresh ports when
// another process took a port first.
func startMember(dir string) (*embed.Member, string, error) {
	for attempt := 1; ; attempt++ {
		m, u, err := tryStartMember(filepath.Join(dir, strconv.Itoa(attempt)))
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) || attempt == 5 {
			return m, u, err
		}
	}
}

func tryStartMember(dir string) (*embed.Member, string, error) {
	clientURL, err := freeURL()
	if err != nil {
		return nil, "", err
	}
	peerURL, err := freeURL()
	if err != nil {
		return nil, "", err
	}
	cfg := config.NewConfig()
	cfg.Name, cfg.Dir = "m0", dir
	cfg.TickMs, cfg.ElectionMs = 10, 100
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = "m0=" + peerURL.String()
	m, err := embed.StartMember(cfg, zap.NewNop())
	if err != nil {
		return nil, "", err
	}
	select {
	case <-m.ReadyNotify():
		return m, clientURL.String(), nil
	case err := <-m.Err():
		m.Close()
		return nil, "", err
	case <-time.After(20 * time.Second):
		m.Close()
		return nil, "", errors.New("member not ready after 20s")
	}
}

func freeURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, err
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}, nil
}

// runAgainstCairn runs the tool with args against the shared member and
// returns its text output and the raw JSON report.
func runAgainstCairn(t *testing.T, args ...string) (string, []byte) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "report.json")
	full := append([]string{"--endpoints", cairnEndpoint(t), "--report-json", jsonPath}, args...)
	var stdout strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := execute(ctx, full, &stdout, io.Discard); err != nil {
		t.Fatalf("benchmark %v: %v\n%s", args, err, stdout.String())
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), raw
}

// wantClean checks one latency report: every planned request succeeded,
// and the percentiles the issue asks for are there.
func wantClean(t *testing.T, what string, rep *testReport, planned int64) {
	t.Helper()
	if rep == nil {
		t.Fatalf("%s: report missing", what)
	}
	if rep.Planned != planned || rep.Succeeded != planned || rep.Failed != 0 || rep.NotSent != 0 || len(rep.Errors) != 0 {
		t.Errorf("%s: %+v, want %d planned and succeeded, no errors", what, rep, planned)
	}
	if planned > 0 && len(rep.Percentiles) != 8 {
		t.Errorf("%s: %d percentiles, want the default 8 (p10 ... p99.9)", what, len(rep.Percentiles))
	}
}

func wantText(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func decode(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("bad JSON report: %v\n%s", err, raw)
	}
}

func TestTxnMixedAgainstCairn(t *testing.T) {
	tests := []struct {
		ratio       string
		consistency string
	}{
		{ratio: "0", consistency: "l"},
		{ratio: "1", consistency: "l"},
		{ratio: "3", consistency: "s"},
	}
	for _, tt := range tests {
		t.Run("ratio "+tt.ratio+" "+tt.consistency, func(t *testing.T) {
			const total = 60
			cfg := txnMixedConfig{total: total, rwRatio: must(strconv.ParseFloat(tt.ratio, 64))}
			reads := cfg.plannedReads()
			out, raw := runAgainstCairn(t, "--clients", "4", "--conns", "2", "txn-mixed", "--total", strconv.Itoa(total),
				"--rw-ratio", tt.ratio, "--consistency", tt.consistency, "--key-space-size", "16")
			var res struct {
				Planned int64       `json:"planned"`
				NotSent int64       `json:"not_sent"`
				Reads   *testReport `json:"reads"`
				Writes  *testReport `json:"writes"`
			}
			decode(t, raw, &res)
			if res.Planned != total || res.NotSent != 0 {
				t.Errorf("planned %d not sent %d, want %d and 0", res.Planned, res.NotSent, total)
			}
			wantClean(t, "reads", res.Reads, reads)
			wantClean(t, "writes", res.Writes, total-reads)
			wantText(t, out, "=== Reads (txn with one range) ===", "=== Writes (txn with one put) ===")
		})
	}
}

func TestWatchGetAgainstCairn(t *testing.T) {
	out, raw := runAgainstCairn(t, "--clients", "2", "watch-get", "--watchers", "20", "--streams", "3",
		"--events", "5", "--get-total", "40")
	var res struct {
		Gets  *testReport `json:"gets"`
		Watch struct {
			Watchers       int   `json:"watchers"`
			ExpectedEvents int64 `json:"expected_events"`
			ReceivedEvents int64 `json:"received_events"`
			CaughtUp       int64 `json:"caught_up_watchers"`
			StreamErrors   []any `json:"stream_errors"`
		} `json:"watch"`
	}
	decode(t, raw, &res)
	wantClean(t, "gets", res.Gets, 40)
	w := res.Watch
	if w.Watchers != 20 || w.CaughtUp != 20 || w.ExpectedEvents != 100 || w.ReceivedEvents < 100 || len(w.StreamErrors) != 0 {
		t.Errorf("watch report %+v, want all 20 watchers caught up on 100 events", w)
	}
	wantText(t, out, "Watchers caught up:\t20 of 20 on 3 streams")
}

func TestSTMAgainstCairn(t *testing.T) {
	for _, iso := range []string{"c", "r", "s", "ss"} {
		t.Run(iso, func(t *testing.T) {
			_, raw := runAgainstCairn(t, "--clients", "4", "--conns", "2", "stm", "--total", "40",
				"--isolation", iso, "--keys", "4", "--keys-per-txn", "2")
			var res struct {
				Txns      *testReport `json:"txns"`
				ApplyRuns int64       `json:"apply_runs"`
				Retries   int64       `json:"retries"`
			}
			decode(t, raw, &res)
			wantClean(t, "txns", res.Txns, 40)
			if res.ApplyRuns != 40+res.Retries {
				t.Errorf("apply runs %d, retries %d: want runs = 40 + retries", res.ApplyRuns, res.Retries)
			}
		})
	}
}

func TestGlobalFlagsAgainstCairn(t *testing.T) {
	// --all-members finds the one member; --rss-pid reports this process,
	// which is where the member runs; --rate only paces, so the run still
	// succeeds (how it paces is TestLimiterPacing's job).
	pid := strconv.Itoa(os.Getpid())
	out, raw := runAgainstCairn(t, "--all-members", "--rss-pid", pid, "--rate", "2000", "--clients", "3",
		"put", "--total", "30")
	var rep struct {
		testReport
		ServerMemory []struct {
			PID          int   `json:"pid"`
			PeakRSSBytes int64 `json:"peak_rss_bytes"`
		} `json:"server_memory"`
	}
	decode(t, raw, &rep)
	wantClean(t, "put", &rep.testReport, 30)
	if len(rep.ServerMemory) != 1 || rep.ServerMemory[0].PeakRSSBytes <= 0 || fmt.Sprint(rep.ServerMemory[0].PID) != pid {
		t.Errorf("server memory %+v, want this process with a positive peak", rep.ServerMemory)
	}
	wantText(t, out, "Server memory (peak RSS, VmHWM):", "pid "+pid)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
