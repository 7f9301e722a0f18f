package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairnkv/cairn/tools/benchmark/cluster"
)

// benchCase is one run of the benchmark tool in the standard suite.
type benchCase struct {
	name string
	args []string // global flags for the load shape, then the command
	// rows names the reports in the case's JSON that become rows of the
	// summary: key "" is a report at the top level.
	rows []rowRef
}

type rowRef struct{ label, key string }

func flat(label string) []rowRef { return []rowRef{{label, ""}} }

// standardSuite is what `make bench` runs against every cluster. Totals
// are small enough that both clusters of one server finish in about a
// minute and a half on a 2-core machine; they are for comparing builds
// and servers on one machine, not for absolute numbers.
func standardSuite() []benchCase {
	const many = "100" // clients in the concurrent cases
	return []benchCase{
		{"put, 1 client", []string{"--clients", "1", "--conns", "1", "put", "--total", "2000", "--key-space-size", "1000"}, flat("put, 1 client")},
		{"put, 100 clients", []string{"--clients", many, "--conns", "10", "put", "--total", "20000", "--key-space-size", "20000"}, flat("put, 100 clients")},
		{"range l", []string{"--clients", many, "--conns", "10", "range", "foo", "--total", "20000", "--consistency", "l"}, flat("range, linearizable")},
		{"range s", []string{"--clients", many, "--conns", "10", "range", "foo", "--total", "20000", "--consistency", "s"}, flat("range, serializable")},
		{"txn-put", []string{"--clients", many, "--conns", "10", "txn-put", "--total", "8000", "--txn-ops", "4", "--key-space-size", "10000"}, flat("txn-put (4 puts)")},
		{"txn-mixed", []string{"--clients", many, "--conns", "10", "txn-mixed", "--total", "10000", "--rw-ratio", "4", "--key-space-size", "1000", "--limit", "10"},
			[]rowRef{{"txn-mixed reads (4:1)", "reads"}, {"txn-mixed writes", "writes"}}},
		{"watch-latency", []string{"--clients", "10", "--conns", "10", "watch-latency", "--watchers", "100", "--streams", "10", "--put-total", "1000", "--put-rate", "500"},
			[]rowRef{{"watch-latency puts", "puts"}, {"watch-latency put-to-event", "events"}}},
		{"lease-keepalive", []string{"--clients", many, "--conns", "10", "lease-keepalive", "--total", "20000"}, flat("lease-keepalive")},
		{"lease-grant", []string{"--clients", many, "--conns", "10", "lease-grant", "--total", "5000"}, flat("lease-grant")},
		{"stm", []string{"--clients", "20", "--conns", "5", "stm", "--total", "2000", "--keys", "1000", "--keys-per-txn", "2", "--isolation", "ss"},
			[]rowRef{{"stm (ss, 2 keys of 1000)", "txns"}}},
	}
}

// Suites -suite can name.
const (
	suiteStandard   = "standard"
	suiteWatchScale = "watch-scale"
)

// suiteCases returns the cases of the named suite, and whether each case
// needs a cluster of its own (so that its server RSS per watcher does not
// reuse memory an earlier case freed).
func suiteCases(name string) (cases []benchCase, freshEach bool, err error) {
	switch name {
	case suiteStandard:
		return standardSuite(), false, nil
	case suiteWatchScale:
		return watchScaleSuite(), true, nil
	}
	return nil, false, fmt.Errorf("unknown suite %q (want %s or %s)", name, suiteStandard, suiteWatchScale)
}

// watchScaleConns is the connection count of watchScaleSuite's second case.
const watchScaleConns = 10000

// watchScaleSuite is issue 18's watch at scale: 100,000 watchers on 1,000
// streams, over 100 and over 10,000 connections, each case on a fresh
// cluster. Every put reaches every watcher, so one put is 100,000 events
// for the load generator: one put every 2 s keeps it from falling behind
// on 2 cores, and the put-to-event p99 is then how long one revision
// takes to reach the last watcher, not a backlog.
func watchScaleSuite() []benchCase {
	watch := func(conns int) []string {
		return []string{"--clients", "10", "--conns", strconv.Itoa(conns), "watch-latency", "--watchers", "100000", "--streams", "1000",
			"--put-total", "20", "--put-rate", "0.5", "--wait-timeout", "120s"}
	}
	return []benchCase{
		{"watch 100k on 1000 streams, 100 conns", watch(100),
			[]rowRef{{"watch 100k, 100 conns: puts", "puts"}, {"watch 100k, 100 conns: put-to-event", "events"}}},
		{"watch 100k on 1000 streams, 10k conns", watch(watchScaleConns),
			[]rowRef{{"watch 100k, 10k conns: puts", "puts"}, {"watch 100k, 10k conns: put-to-event", "events"}}},
	}
}

// latency is the part of one of the tool's JSON reports the summary uses.
type latency struct {
	Planned     int64   `json:"planned"`
	Succeeded   int64   `json:"succeeded"`
	Failed      int64   `json:"failed"`
	NotSent     int64   `json:"not_sent"`
	PerSec      float64 `json:"requests_per_sec"`
	Average     float64 `json:"average_seconds"`
	Percentiles []struct {
		P       float64 `json:"p"`
		Seconds float64 `json:"seconds"`
	} `json:"percentiles"`
}

func (l *latency) percentile(p float64) float64 {
	for _, pc := range l.Percentiles {
		if pc.P == p {
			return pc.Seconds
		}
	}
	return 0
}

// row is one line of the summary: one case's report in one round. The CPU
// figures are the whole case's, shared by the rows of a case that has two.
type row struct {
	Server    string  `json:"server"`
	Members   int     `json:"members"`
	Round     int     `json:"round"`
	Case      string  `json:"case"`
	Succeeded int64   `json:"succeeded"`
	Failed    int64   `json:"failed"`
	PerSec    float64 `json:"per_sec"`
	Average   float64 `json:"average_seconds"`
	P50       float64 `json:"p50_seconds"`
	P90       float64 `json:"p90_seconds"`
	P99       float64 `json:"p99_seconds"`
	P999      float64 `json:"p99_9_seconds"`

	// BytesPerWatcher is the servers' RSS growth per watcher while the
	// watchers were created, on a watch case's events row (0 elsewhere).
	BytesPerWatcher float64 `json:"bytes_per_watcher,omitempty"`

	ServerCPU  float64 `json:"server_cpu_seconds"`
	OtherCores float64 `json:"other_processes_cores"`
	Load1      float64 `json:"load_average_1m"`
}

// OpsPerCPU is the row's successful operations per server CPU-second.
func (r row) OpsPerCPU() float64 {
	if r.ServerCPU <= 0 {
		return 0
	}
	return float64(r.Succeeded) / r.ServerCPU
}

type memory struct {
	PID          int    `json:"pid"`
	PeakRSSBytes int64  `json:"peak_rss_bytes"`
	Name         string `json:"name"`
}

// runCase runs one case against c, keeping its text and JSON reports in
// dir, and returns its rows and the servers' peak memory so far.
func runCase(ctx context.Context, bench string, c *cluster.Cluster, bc benchCase, dir string, r run) ([]row, []memory, error) {
	base := filepath.Join(dir, strings.NewReplacer(" ", "-", ",", "").Replace(bc.name))
	args := []string{"--endpoints", c.Endpoints(), "--rss-pid", c.PIDs(), "--no-progress", "--report-json", base + ".json"}
	if len(c.Members) > 1 {
		args = append(args, "--all-members")
	}
	args = append(args, bc.args...)
	out, err := os.Create(base + ".txt")
	if err != nil {
		return nil, nil, err
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, bench, args...)
	cmd.Stdout = out
	var stderr strings.Builder
	cmd.Stderr = &stderr
	before, err := sampleCPU("/proc", c.PIDList())
	if err != nil {
		return nil, nil, err
	}
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w\n%s%s", bc.name, err, stderr.String(), c.Alive())
	}
	wall := time.Since(start).Seconds()
	after, err := sampleCPU("/proc", c.PIDList())
	if err != nil {
		return nil, nil, err
	}
	benchCPU := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	raw, err := os.ReadFile(base + ".json")
	if err != nil {
		return nil, nil, err
	}
	rows, mem, err := parseCase(raw, bc, r)
	cost := between(before, after, wall, benchCPU)
	for i := range rows {
		rows[i].ServerCPU, rows[i].OtherCores, rows[i].Load1 = cost.ServerSeconds, cost.OtherCores, cost.Load1
	}
	return rows, mem, err
}

func parseCase(raw []byte, bc benchCase, r run) ([]row, []memory, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", bc.name, err)
	}
	var mem []memory
	if m, ok := top["server_memory"]; ok {
		if err := json.Unmarshal(m, &mem); err != nil {
			return nil, nil, fmt.Errorf("%s: server_memory: %w", bc.name, err)
		}
	}
	var watchers struct {
		BytesPerWatcher float64 `json:"bytes_per_watcher"`
	}
	if m, ok := top["watcher_memory"]; ok && string(m) != "null" {
		if err := json.Unmarshal(m, &watchers); err != nil {
			return nil, nil, fmt.Errorf("%s: watcher_memory: %w", bc.name, err)
		}
	}
	rows := make([]row, 0, len(bc.rows))
	for _, ref := range bc.rows {
		part := raw
		if ref.key != "" {
			part = top[ref.key]
		}
		var l latency
		if err := json.Unmarshal(part, &l); err != nil {
			return nil, nil, fmt.Errorf("%s: %s: %w", bc.name, ref.key, err)
		}
		rows = append(rows, row{
			Server: r.server, Members: r.members, Round: r.round, Case: ref.label,
			Succeeded: l.Succeeded, Failed: l.Failed + l.NotSent, PerSec: l.PerSec, Average: l.Average,
			P50: l.percentile(50), P90: l.percentile(90), P99: l.percentile(99), P999: l.percentile(99.9),
		})
		if ref.key == "events" {
			rows[len(rows)-1].BytesPerWatcher = watchers.BytesPerWatcher
		}
	}
	return rows, mem, nil
}
