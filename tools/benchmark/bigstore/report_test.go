package main

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tools/benchmark/procfs"
)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func TestSplitWindows(t *testing.T) {
	// Call from 100 ms to 130 ms, windows of 100 ms. A sample belongs to
	// the window its scheduled time falls in, bounds [start, end).
	boom := errors.New("boom")
	samples := []probeSample{
		{at: ms(-1), latency: ms(900)},              // before the first window: dropped
		{at: ms(0), latency: ms(1)},                 // first instant of "before"
		{at: ms(50), latency: ms(3)},                // before
		{at: ms(99), latency: ms(2)},                // before
		{at: ms(60), err: boom},                     // before, failed
		{at: ms(100), latency: ms(40)},              // first instant of "during"
		{at: ms(129), latency: ms(10), late: ms(4)}, // during, sent 4 ms late
		{at: ms(130), latency: ms(5)},               // first instant of "after"
		{at: ms(229), latency: ms(7)},               // after
		{at: ms(230), latency: ms(1000)},            // past the last window: dropped
	}
	got := splitWindows(samples, ms(100), ms(130), ms(100), [4]walFsyncs{})
	want := []probeWindow{
		{Name: "before", Seconds: 0.1, Succeeded: 3, Failed: 1, P50: 0.002, P99: 0.003, Max: 0.003,
			Errors: []errorCount{{Message: "boom", Count: 1}}},
		{Name: "during", Seconds: 0.03, Succeeded: 2, P50: 0.010, P99: 0.040, Max: 0.040, MaxSendDelay: 0.004},
		{Name: "after", Seconds: 0.1, Succeeded: 2, P50: 0.005, P99: 0.007, Max: 0.007},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d windows, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name != w.Name || !near(g.Seconds, w.Seconds) || g.Succeeded != w.Succeeded || g.Failed != w.Failed ||
			!near(g.P50, w.P50) || !near(g.P99, w.P99) || !near(g.Max, w.Max) || !slices.Equal(g.Errors, w.Errors) ||
			!near(g.MaxSendDelay, w.MaxSendDelay) {
			t.Errorf("window %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestSplitWindowsEmpty(t *testing.T) {
	for _, w := range splitWindows(nil, ms(10), ms(10), ms(10), [4]walFsyncs{}) {
		if w.Succeeded != 0 || w.Failed != 0 || w.P99 != 0 || w.Max != 0 {
			t.Errorf("empty window %+v", w)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
		ok   bool
	}{
		{nil, 0, false},
		{[]float64{7}, 7, true},
		{[]float64{3, 1, 2}, 2, true},
		{[]float64{4, 1, 3, 2}, 2.5, true},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.in)
		got, ok := median(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("median(%v) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("median reordered its input: %v", tt.in)
		}
	}
}

func TestParseLoad(t *testing.T) {
	raw := `{"succeeded": 98, "failed": 1, "not_sent": 1, "total_seconds": 2, "requests_per_sec": 49,
	  "percentiles": [{"p": 10, "seconds": 0.001}, {"p": 50, "seconds": 0.002}, {"p": 99, "seconds": 0.009}]}`
	got, err := parseLoad([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := loadResult{Succeeded: 98, Failed: 2, Seconds: 2, OpsPerSec: 49, P50: 0.002, P99: 0.009}
	if got != want {
		t.Errorf("parseLoad = %+v, want %+v", got, want)
	}
	if _, err := parseLoad([]byte("{")); err == nil {
		t.Error("a broken report parsed")
	}
}

func TestLoadArgsWriteEveryKeyOnceInOrder(t *testing.T) {
	cfg := defaultConfig()
	cfg.keys = 1234
	got := strings.Join(loadArgs(cfg, "http://127.0.0.1:1", "/x.json"), " ")
	want := "--endpoints http://127.0.0.1:1 --clients 100 --conns 10 --no-progress --report-json /x.json " +
		"put --total 1234 --key-space-size 1234 --sequential-keys --key-size 16 --val-size 256"
	if got != want {
		t.Errorf("load args\n %s\nwant\n %s", got, want)
	}
}

func TestPhaseNoise(t *testing.T) {
	t0 := time.Unix(1000, 0)
	mark := func(at time.Duration, machine, ours procfs.Ticks, load float64) cpuMark {
		return cpuMark{at: t0.Add(at), machine: machine, ours: ours, load: procfs.LoadAvg{load, 0, 0}, ok: true}
	}
	tests := []struct {
		name          string
		before, after cpuMark
		want          phaseFigures
	}{
		{
			// 10 s; the machine was busy 15 CPU-seconds, we used 6 of them.
			name:   "others busy",
			before: mark(0, 1000, 100, 1.5), after: mark(10*time.Second, 2500, 700, 2.5),
			want: phaseFigures{Server: "s", Phase: "p", Seconds: 10, Load1Start: 1.5, Load1End: 2.5, OwnCores: 0.6, OtherCores: 0.9},
		},
		{
			// Readings a tick apart can make ours exceed the machine's.
			name:   "clamped",
			before: mark(0, 1000, 100, 1), after: mark(time.Second, 1050, 160, 1),
			want: phaseFigures{Server: "s", Phase: "p", Seconds: 1, Load1Start: 1, Load1End: 1, OwnCores: 0.6},
		},
		{
			name:   "unreadable /proc",
			before: cpuMark{at: t0}, after: mark(time.Second, 1, 1, 1),
			want: phaseFigures{Server: "s", Phase: "p", Seconds: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := phaseNoise("s", "p", tt.before, tt.after)
			if got.Server != tt.want.Server || got.Phase != tt.want.Phase || !near(got.Seconds, tt.want.Seconds) ||
				got.Load1Start != tt.want.Load1Start || got.Load1End != tt.want.Load1End ||
				!near(got.OwnCores, tt.want.OwnCores) || !near(got.OtherCores, tt.want.OtherCores) {
				t.Errorf("phaseNoise = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// sampleResult is a two-server result with hand-picked figures.
func sampleResult() *result {
	cfg := defaultConfig()
	cfg.keys, cfg.restarts = 1000, 3
	res := newResult(cfg)
	res.Servers = []string{"cairn", "etcd"}
	maint := func(took float64, dbFile int64) *maintenanceResult {
		return &maintenanceResult{TookSeconds: took, Windows: []probeWindow{
			{Name: "before", P99: 0.004}, {Name: "during", P99: 0.008, Max: 0.02, Failed: 3}, {Name: "after", P99: 0.002},
		}, After: sizes{DBFile: dbFile, DBSize: dbFile, DBSizeInUse: dbFile / 2}}
	}
	res.Runs["cairn"] = &serverResult{
		Versions: []versionResult{
			{Version: 1, Load: loadResult{OpsPerSec: 3000, P50: 0.002, P99: 0.010}, Sizes: sizes{DBFile: 300e6, RSS: 50e6}},
			{Version: 2, Load: loadResult{OpsPerSec: 2000}, Sizes: sizes{DBFile: 600e6}},
		},
		Restarts: []restartSample{
			{StopSeconds: 1, ReadySeconds: 9, FirstGetSeconds: 10, RSSAtGet: 100e6},
			{StopSeconds: 3, ReadySeconds: 3, FirstGetSeconds: 4, RSSAtGet: 300e6},
			{StopSeconds: 2, ReadySeconds: 6, FirstGetSeconds: 7, RSSAtGet: 200e6},
		},
		Compaction: maint(1.5, 600e6),
		Defrag:     maint(0.5, 300e6),
	}
	res.Runs["etcd"] = &serverResult{
		Versions: []versionResult{
			{Version: 1, Load: loadResult{OpsPerSec: 1500, P50: 0.004, P99: 0.020}, Sizes: sizes{DBFile: 200e6, RSS: 100e6}},
		},
		Restarts: []restartSample{{StopSeconds: 4, ReadySeconds: 12, FirstGetSeconds: 14, RSSAtGet: 400e6}},
	}
	res.Phases = []phaseFigures{
		{Server: "cairn", Phase: "load v1", Seconds: 12.34, Load1Start: 1, Load1End: 2.5, OwnCores: 1.5, OtherCores: 0.25},
		{Server: "etcd", Phase: "load v1", Seconds: 10, Load1Start: 2.5, Load1End: 3, OwnCores: 1, OtherCores: 0.75},
		{Server: "etcd", Phase: "load v2", Seconds: 10, Load1Start: 3, Load1End: 0.5, OwnCores: 1, OtherCores: 1},
		{Server: "etcd", Phase: "stop", Seconds: 0.01, Load1Start: 9, Load1End: 9, OtherCores: 2}, // too short to count
	}
	return res
}

func TestMarkdownPutsServersSideBySide(t *testing.T) {
	md := markdown(sampleResult())
	for _, want := range []string{
		"1,000 sequential keys of 16 B with 256 B values, written 2 times",
		"| figure | cairn | etcd | cairn/etcd |",
		"| v1 load throughput (ops/s) | 3000 | 1500 | 2.00 |",
		"| v1 load p50 (ms) | 2.00 | 4.00 | 0.50 |",
		"| v1 db file (MB) | 300.0 | 200.0 | 1.50 |",
		"| v1 VmRSS (MB) | 50.0 | 100.0 | 0.50 |",
		// etcd has no second version: its cell and the ratio stay empty.
		"| v2 load throughput (ops/s) | 2000 | | |",
		"## Restart (median of 3)",
		// cairn's medians are 2, 6, 7 s and 200 MB; etcd's single sample.
		"| SIGTERM to exit (s) | 2.00 | 4.00 | 0.50 |",
		"| exec to \"ready to serve client requests\" (s) | 6.00 | 12.00 | 0.50 |",
		"| exec to first linearizable Get (s) | 7.00 | 14.00 | 0.50 |",
		"| VmRSS at the first Get (MB) | 200.0 | 400.0 | 0.50 |",
		"| took (s) | 1.50 | | |",
		"| probe during p99 (ms) | 8.00 | | |",
		"| probe during max (ms) | 20.00 | | |",
		"| probe during errors | 3 | | |",
		"| after: dbSizeInUse (MB) | 300.0 | | |",
		"## Defragmentation",
		"| cairn | 2 | 3.00 | 3.00 | 4.00 | 300.0 |",
		"| cairn | load v1 | 12.3 | 1.00 → 2.50 | 1.50 | 0.25 |",
		"other processes used 0.75 cores in the median phase (0.25 to 1.00); 1-minute load average 0.50 to 3.00",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

func TestMarkdownOneServerHasNoRatio(t *testing.T) {
	res := sampleResult()
	res.Servers = []string{"cairn"}
	res.Config.SkipDefrag = true
	md := markdown(res)
	if !strings.Contains(md, "| figure | cairn |\n|---|--:|\n") || strings.Contains(md, "cairn/") {
		t.Errorf("one-server report has a ratio column:\n%s", md)
	}
	if strings.Contains(md, "## Defragmentation") {
		t.Errorf("--skip-defrag report has a defrag table:\n%s", md)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -50000: "-50,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
