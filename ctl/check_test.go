package ctl

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestCheckModel(t *testing.T) {
	for load, want := range map[string]int{"s": 150, "small": 150, "medium": 1000, "l": 8000, "xLarge": 15000} {
		m, err := checkModel(perfModels, load)
		if err != nil || m.limit != want {
			t.Errorf("%s: %+v %v", load, m, err)
		}
	}
	if _, err := checkModel(perfModels, "xlarge"); errString(err) != "unknown load option xlarge" {
		t.Errorf("xlarge: %v", err)
	}
}

func TestPerfVerdict(t *testing.T) {
	tests := []struct {
		name string
		s    loadStats
		want string
		fail bool
	}{
		{name: "pass", s: loadStats{rps: 149.2, slowest: 0.1, stddev: 0.01},
			want: "PASS: Throughput is 150 writes/s\nPASS: Slowest request took 0.100000s\nPASS: Stddev is 0.010000s\nPASS\n"},
		{name: "slow", s: loadStats{rps: 100, slowest: 0.6, stddev: 0.2}, fail: true,
			want: "FAIL: Throughput too low: 101 writes/s\nSlowest request took too long: 0.600000s\nStddev too high: 0.200000s\nFAIL\n"},
		{name: "errors", s: loadStats{rps: 150, errs: map[string]int{"b": 1, "a": 2}}, fail: true,
			want: "FAIL: too many errors\nFAIL: ERROR(a) -> 2\nFAIL: ERROR(b) -> 1\nPASS: Throughput is 151 writes/s\nPASS: Slowest request took 0.000000s\nPASS: Stddev is 0.000000s\nFAIL\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			err := perfVerdict(&b, tt.s, 150)
			if b.String() != tt.want || (err != nil) != tt.fail {
				t.Fatalf("got %q (err %v), want %q", b.String(), err, tt.want)
			}
		})
	}
}

func TestLatencies(t *testing.T) {
	l := newLatencies()
	l.add(100*time.Millisecond, nil)
	l.add(300*time.Millisecond, nil)
	l.add(time.Second, errors.New("boom"))
	s := l.stats()
	if s.slowest != 0.3 || s.stddev < 0.0999 || s.stddev > 0.1001 || s.errs["boom"] != 1 || s.rps <= 0 {
		t.Fatalf("%+v", s)
	}
}

func TestProgressShape(t *testing.T) {
	var b strings.Builder
	p := startProgress(&b, 10)
	p.add(4)
	p.finish()
	re := regexp.MustCompile(`^4 / 10 \[-+>_+\] 40\.00% \d+ p/s\n$`)
	if !re.MatchString(b.String()) || len(strings.TrimSuffix(b.String(), "\n")) != progressWidth {
		t.Fatalf("%q", b.String())
	}
}

func TestDowngradeTarget(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"3.6"}, ""},
		{nil, "TARGET_VERSION not provided"},
		{[]string{"3.6", "3.5"}, "too many arguments"},
		{[]string{""}, "target version not provided"},
	}
	for _, tt := range tests {
		if _, err := downgradeTarget(tt.args); errString(err) != tt.wantErr {
			t.Errorf("%q: %v, want %q", tt.args, err, tt.wantErr)
		}
	}
}
