package main

import (
	"fmt"
	"strings"
	"testing"
)

// walMetrics renders a WAL fsync histogram in Prometheus' text format from
// per-bucket (not cumulative) counts, bounds 1 ms doubling as etcd's.
func walMetrics(perBucket ...float64) string {
	var b strings.Builder
	b.WriteString("# TYPE etcd_disk_wal_fsync_duration_seconds histogram\n")
	bound, cum := 0.001, 0.0
	for i, n := range perBucket {
		cum += n
		le := fmt.Sprint(bound)
		if i == len(perBucket)-1 {
			le = "+Inf"
		}
		fmt.Fprintf(&b, "etcd_disk_wal_fsync_duration_seconds_bucket{le=%q} %g\n", le, cum)
		bound *= 2
	}
	fmt.Fprintf(&b, "etcd_disk_wal_fsync_duration_seconds_sum 1.5\netcd_disk_wal_fsync_duration_seconds_count %g\n", cum)
	return b.String()
}

func TestWALStallsBetweenTwoReadings(t *testing.T) {
	// buckets: <=1, <=2, <=4, <=8, <=16, <=32, <=64, <=128 ms, +Inf
	earlier := walMetrics(100, 10, 0, 0, 0, 0, 1, 0, 0)
	cases := []struct {
		name       string
		later      string
		stalls     int64
		slowestMs  float64
		comparable bool
	}{
		{"nothing new", earlier, 0, 0, true},
		{"fast ones only", walMetrics(150, 12, 3, 0, 0, 0, 1, 0, 0), 0, 4, true},
		{"one at exactly 32 ms is not a stall", walMetrics(150, 10, 0, 0, 0, 1, 1, 0, 0), 0, 32, true},
		{"two stalls", walMetrics(101, 10, 0, 0, 0, 0, 2, 1, 0), 2, 128, true},
		{"beyond the last bound", walMetrics(100, 10, 0, 0, 0, 0, 1, 0, 1), 1, 128, true},
		{"counts went down: a restart", walMetrics(5, 0, 0, 0, 0, 0, 0, 0, 0), 0, 0, false},
		{"other buckets", walMetrics(100, 10, 0), 0, 0, false},
	}
	e, err := parseWALFsyncs(strings.NewReader(earlier))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := parseWALFsyncs(strings.NewReader(c.later))
			if err != nil {
				t.Fatal(err)
			}
			stalls, slowest, ok := l.stallsSince(e)
			if ok != c.comparable || stalls != c.stalls || slowest*1000 != c.slowestMs {
				t.Errorf("got stalls %d, slowest %v ms, ok %v; want %d, %v ms, %v", stalls, slowest*1000, ok, c.stalls, c.slowestMs, c.comparable)
			}
		})
	}
}

func TestParseWALFsyncsRefusesWhatItCannotRead(t *testing.T) {
	for _, text := range []string{
		"",
		"some_other_metric 1\n",
		`etcd_disk_wal_fsync_duration_seconds_bucket{le="x"} 1` + "\n",
		`etcd_disk_wal_fsync_duration_seconds_bucket{le="0.001"}` + "\n",
	} {
		if _, err := parseWALFsyncs(strings.NewReader(text)); err == nil {
			t.Errorf("parseWALFsyncs(%q) did not fail", text)
		}
	}
}

func TestWindowsWithoutMetricsHaveNoWALFigure(t *testing.T) {
	for _, w := range splitWindows(nil, ms(10), ms(20), ms(10), [4]walFsyncs{}) {
		if w.WAL != nil {
			t.Errorf("window %s has a WAL figure without readings", w.Name)
		}
	}
}
