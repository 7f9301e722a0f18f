package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const flatJSON = `{"planned": 10, "succeeded": 9, "failed": 1, "not_sent": 0, "requests_per_sec": 90,
 "average_seconds": 0.002, "percentiles": [{"p": 50, "seconds": 0.001}, {"p": 90, "seconds": 0.003},
 {"p": 99, "seconds": 0.004}, {"p": 99.9, "seconds": 0.005}],
 "server_memory": [{"pid": 7, "name": "cairn", "peak_rss_bytes": 1048576}]}`

func TestParseCase(t *testing.T) {
	r := run{server: "cairn", members: 3}
	tests := []struct {
		name string
		raw  string
		bc   benchCase
		want []row
	}{
		{
			name: "flat report",
			raw:  flatJSON,
			bc:   benchCase{name: "put", rows: flat("put")},
			want: []row{{Server: "cairn", Members: 3, Case: "put", Succeeded: 9, Failed: 1, PerSec: 90, Average: 0.002,
				P50: 0.001, P90: 0.003, P99: 0.004, P999: 0.005}},
		},
		{
			name: "watch report with RSS per watcher",
			raw:  `{"puts": {"succeeded": 20}, "events": {"succeeded": 2000}, "watcher_memory": {"watchers": 100, "bytes_per_watcher": 512.5}}`,
			bc:   benchCase{name: "watch", rows: []rowRef{{"p", "puts"}, {"e", "events"}}},
			want: []row{{Server: "cairn", Members: 3, Case: "p", Succeeded: 20}, {Server: "cairn", Members: 3, Case: "e", Succeeded: 2000, BytesPerWatcher: 512.5}},
		},
		{
			name: "nested reports",
			raw:  `{"reads": {"succeeded": 4, "not_sent": 2}, "writes": {"succeeded": 1}}`,
			bc:   benchCase{name: "mixed", rows: []rowRef{{"r", "reads"}, {"w", "writes"}}},
			want: []row{{Server: "cairn", Members: 3, Case: "r", Succeeded: 4, Failed: 2}, {Server: "cairn", Members: 3, Case: "w", Succeeded: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, _, err := parseCase([]byte(tt.raw), tt.bc, r)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(tt.want) {
				t.Fatalf("rows %+v, want %+v", rows, tt.want)
			}
			for i := range rows {
				if rows[i] != tt.want[i] {
					t.Errorf("row %d = %+v, want %+v", i, rows[i], tt.want[i])
				}
			}
		})
	}
	if _, mem, _ := parseCase([]byte(flatJSON), benchCase{rows: flat("x")}, r); len(mem) != 1 || mem[0].PeakRSSBytes != 1<<20 {
		t.Errorf("memory = %+v, want pid 7 at 1 MiB", mem)
	}
	if _, _, err := parseCase([]byte("not json"), benchCase{name: "bad"}, r); err == nil {
		t.Error("a broken report parsed")
	}
}

func TestMarkdownGivesRatiosWithTheirRangeAndEveryRound(t *testing.T) {
	res := &result{
		Rounds:  2,
		Servers: []string{"cairn", "etcd"},
		Rows: []row{
			{Server: "cairn", Members: 1, Round: 1, Case: "put", Succeeded: 1000, PerSec: 100, P99: 0.01, ServerCPU: 2, Load1: 3, OtherCores: 0.5},
			{Server: "etcd", Members: 1, Round: 1, Case: "put", Succeeded: 1000, PerSec: 200, P99: 0.02, ServerCPU: 4, Load1: 5, OtherCores: 0.25},
			{Server: "cairn", Members: 1, Round: 2, Case: "put", Succeeded: 1000, PerSec: 300, P99: 0.01, ServerCPU: 1, Load1: 4, OtherCores: 0.5},
			{Server: "etcd", Members: 1, Round: 2, Case: "put", Succeeded: 1000, PerSec: 200, P99: 0.01, ServerCPU: 4, Load1: 4, OtherCores: 0.5},
		},
		Memory: []memoryRow{
			{Server: "cairn", Members: 1, Round: 1, PerMember: []int64{3 << 20}},
			{Server: "etcd", Members: 1, Round: 1, PerMember: []int64{6 << 20}},
		},
	}
	md := markdown(res)
	for _, want := range []string{
		"| case | cairn ops/s | cairn ops/CPU-s | cairn p99 | load | other cores |",
		// ops/s ratios 0.5 and 1.5; ops/CPU-s 2 and 4; p99 0.5 and 1.
		"| put | 1.00 [0.50–1.50] | 3.00 [2.00–4.00] | 0.75 [0.50–1.00] | 4.00 [3.00–5.00] | 0.50 [0.25–0.50] |",
		"| put | cairn | 2 | 300 | 1000 | 1.00 | 0.00 | 0.00 | 10.00 | 0.00 | 0 | 4.0 | 0.50 |",
		"| cairn | 1 | 1 | 3.0 |",
		"- cairn, 1 member: 0.50",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

func TestMarkdownGivesRSSPerWatcherWithItsRatio(t *testing.T) {
	res := &result{
		Rounds:  2,
		Servers: []string{"cairn", "etcd"},
		Rows: []row{
			{Server: "cairn", Members: 1, Round: 1, Case: "w events", BytesPerWatcher: 500},
			{Server: "etcd", Members: 1, Round: 1, Case: "w events", BytesPerWatcher: 1000},
			{Server: "cairn", Members: 1, Round: 2, Case: "w events", BytesPerWatcher: 600},
			{Server: "etcd", Members: 1, Round: 2, Case: "w events", BytesPerWatcher: 1000},
			{Server: "cairn", Members: 1, Round: 1, Case: "w puts"},
		},
	}
	md := markdown(res)
	for _, want := range []string{
		"| w events | cairn | 1 | 2 | 600 |",
		"- cairn, w events, 1 member: 0.55 [0.50–0.60]",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "## 3 members") {
		t.Errorf("report has a section for a cluster size that did not run:\n%s", md)
	}
}

func TestSuiteCases(t *testing.T) {
	for _, tc := range []struct {
		name      string
		freshEach bool
		wantErr   bool
	}{
		{suiteStandard, false, false},
		{suiteWatchScale, true, false},
		{"nope", false, true},
	} {
		cases, fresh, err := suiteCases(tc.name)
		if (err != nil) != tc.wantErr || fresh != tc.freshEach || (err == nil && len(cases) == 0) {
			t.Errorf("suiteCases(%q) = %d cases, fresh %v, %v", tc.name, len(cases), fresh, err)
		}
		for _, bc := range cases {
			if strings.ContainsRune(bc.name, filepath.Separator) {
				t.Errorf("case %q: its name becomes a file name", bc.name)
			}
		}
	}
}

func TestScheduleAlternatesServersAtEachSize(t *testing.T) {
	var got []string
	for _, r := range schedule([]server{{"cairn", "c"}, {"etcd", "e"}}, []int{1, 3}, 2) {
		got = append(got, fmt.Sprintf("%s/%d/%d", r.server, r.members, r.round))
	}
	want := "cairn/1/1 etcd/1/1 cairn/3/1 etcd/3/1 cairn/1/2 etcd/1/2 cairn/3/2 etcd/3/2"
	if strings.Join(got, " ") != want {
		t.Errorf("schedule %v, want %s", got, want)
	}
}

func TestSampleCPUReadsProc(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// utime 150 and stime 50 ticks; the command name holds a space and a parenthesis.
	write("42/stat", "42 (my (server) S 1 42 42 0 -1 4194560 100 0 0 0 150 50 0 0 20 0 9 0 100 1000 50\n")
	write("stat", "cpu  1000 10 300 5000 200 5 15 0 7 0\ncpu0 1 2 3 4 5 6 7 8\n")
	write("loadavg", "3.25 2.00 1.00 2/300 4000\n")
	s, err := sampleCPU(root, []int{42})
	if err != nil {
		t.Fatal(err)
	}
	if s.servers != 2 || s.machineBusy != 13.3 || s.load1 != 3.25 {
		t.Errorf("sample %+v, want servers 2 s, machine busy 13.3 s, load 3.25", s)
	}
	if _, err := sampleCPU(root, []int{43}); err == nil {
		t.Error("a missing process sampled")
	}
	cost := between(cpuSample{servers: 1, machineBusy: 10}, cpuSample{servers: 3, machineBusy: 16, load1: 2}, 2, 1)
	if cost != (caseCPU{ServerSeconds: 2, OtherCores: 1.5, Load1: 2}) {
		t.Errorf("between = %+v", cost)
	}
}
