package main

import (
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

func TestMarkdownPutsServersSideBySide(t *testing.T) {
	runs := []run{{server: "cairn", members: 1}, {server: "etcd", members: 1}}
	res := &result{
		Rows: []row{
			{Server: "cairn", Members: 1, Case: "put", PerSec: 100, P99: 0.01},
			{Server: "etcd", Members: 1, Case: "put", PerSec: 200, P99: 0.02},
		},
		Runs:   []string{"cairn, 1 member", "etcd, 1 member"},
		Memory: map[string][]int64{"cairn, 1 member": {3 << 20}},
	}
	md := markdown(res, runs)
	for _, want := range []string{
		"| case | cairn ops/s | cairn p50 |",
		"| etcd ops/s |",
		"| put | 100 | 0.00 | 0.00 | 10.00 | 0.00 | 0 | 200 | 0.00 | 0.00 | 20.00 | 0.00 | 0 |",
		"| cairn, 1 member | 3.0 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
