package compactor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/server/errs"
)

// periodicCase drives periodic mode with one tick per sampling step; at
// tick i (i steps after the start) the store's revision becomes 100+i, so
// the sample taken at tick i is 100+i and the first sample is 100.
type periodicCase struct {
	name      string
	retention time.Duration
	ticks     int
	// before runs before tick i (pause, resume, failures).
	before func(i int, c *Compactor, st *fakeStore)
	// want maps a tick to the revision compacted to at it.
	want map[int][]int64
}

func TestPeriodic(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []periodicCase{
		{
			// The first compaction waits a whole retention, then one per
			// retention, each to the oldest sample of the window.
			name: "10s", retention: 10 * time.Second, ticks: 31,
			want: map[int][]int64{10: {100}, 20: {109}, 30: {119}},
		},
		{
			// Above an hour: samples every 6 minutes, the first compaction
			// after the retention, then one every hour.
			name: "2h", retention: 2 * time.Hour, ticks: 41,
			want: map[int][]int64{20: {100}, 30: {109}, 40: {119}},
		},
		{
			// A bare number of hours arrives here already parsed.
			name: "1h", retention: time.Hour, ticks: 21,
			want: map[int][]int64{10: {100}, 20: {109}},
		},
		{
			// A failure is retried at every step, to the oldest sample of
			// the window as it then is.
			name: "retry after failure", retention: 10 * time.Second, ticks: 22,
			before: func(i int, _ *Compactor, st *fakeStore) {
				switch i {
				case 10:
					st.setErr(errBoom)
				case 12:
					st.setErr(nil)
				}
			},
			want: map[int][]int64{10: {100}, 11: {100}, 12: {101}, 22: {111}},
		},
		{
			// Another compaction got there first: counts as done.
			name: "already compacted", retention: 10 * time.Second, ticks: 21,
			before: func(i int, _ *Compactor, st *fakeStore) {
				if i == 10 {
					st.setErr(errs.ErrCompacted)
				}
			},
			want: map[int][]int64{10: {100}, 20: {109}},
		},
		{
			// Paused, it goes on sampling and compacts the current window
			// as soon as it resumes.
			name: "pause", retention: 10 * time.Second, ticks: 16,
			before: func(i int, c *Compactor, _ *fakeStore) {
				switch i {
				case 1:
					c.Pause()
				case 15:
					c.Resume()
				}
			},
			want: map[int][]int64{15: {104}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runPeriodicCase(t, tc) })
	}
}

func runPeriodicCase(t *testing.T, tc periodicCase) {
	c, fc, st := startCompactor(t, ModePeriodic, tc.retention, 100)
	step := newPeriodicWindow(tc.retention).step
	for i := 1; i <= tc.ticks; i++ {
		if tc.before != nil {
			tc.before(i, c, st)
		}
		tick(fc, st, int64(100+i), step)
		if got := st.takeCompacted(); !slices.Equal(got, tc.want[i]) {
			t.Fatalf("tick %d (%v): compacted to %v, want %v", i, time.Duration(i)*step, got, tc.want[i])
		}
	}
}

func TestPeriodicSkipsUnchangedRevision(t *testing.T) {
	_, fc, st := startCompactor(t, ModePeriodic, 10*time.Second, 7)
	for i := 1; i <= 30; i++ {
		tick(fc, st, 7, time.Second)
		want := []int64(nil)
		if i == 10 {
			want = []int64{7}
		}
		if got := st.takeCompacted(); !slices.Equal(got, want) {
			t.Fatalf("tick %d: compacted to %v, want %v", i, got, want)
		}
	}
}

func TestRevision(t *testing.T) {
	c, fc, st := startCompactor(t, ModeRevision, 10, 1)
	steps := []struct {
		name    string
		rev     int64
		advance time.Duration
		before  func()
		want    []int64
	}{
		{name: "target not positive", rev: 10, advance: 5 * time.Minute},
		{name: "compacts rev - retention", rev: 25, advance: 5 * time.Minute, want: []int64{15}},
		{name: "same target again", rev: 25, advance: 5 * time.Minute},
		{name: "not yet five minutes", rev: 40, advance: 4 * time.Minute},
		{name: "five minutes", rev: 40, advance: time.Minute, want: []int64{30}},
		{name: "paused", rev: 50, advance: 5 * time.Minute, before: c.Pause},
		{name: "resumed", rev: 50, advance: 5 * time.Minute, before: c.Resume, want: []int64{40}},
		{name: "failure", rev: 60, advance: 5 * time.Minute, before: func() { st.setErr(errors.New("boom")) }, want: []int64{50}},
		{name: "retried", rev: 60, advance: 5 * time.Minute, before: func() { st.setErr(nil) }, want: []int64{50}},
		{name: "already compacted counts", rev: 70, advance: 5 * time.Minute, before: func() { st.setErr(errs.ErrCompacted) }, want: []int64{60}},
		{name: "not retried", rev: 70, advance: 5 * time.Minute, before: func() { st.setErr(nil) }},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		tick(fc, st, s.rev, s.advance)
		if got := st.takeCompacted(); !slices.Equal(got, s.want) {
			t.Fatalf("%s: compacted to %v, want %v", s.name, got, s.want)
		}
	}
}

// Stop cancels a compaction in flight and returns once the loop is gone
// (goleak checks nothing is left).
func TestStopCancelsCompaction(t *testing.T) {
	fc := newFakeClock()
	entered := make(chan struct{})
	c, err := New(Config{
		Mode: ModeRevision, Retention: 1, Clock: fc,
		Rev: func() int64 { return 5 },
		Compact: func(ctx context.Context, _ int64) error {
			close(entered)
			<-ctx.Done()
			return ctx.Err()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Run()
	fc.blockUntilWaiting()
	fc.advance(revisionInterval)
	<-entered
	c.Stop()
}

func TestNewRefuses(t *testing.T) {
	rev := func() int64 { return 0 }
	compact := func(context.Context, int64) error { return nil }
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown mode", Config{Mode: "hourly", Retention: 1, Rev: rev, Compact: compact}, "unsupported compaction mode hourly"},
		{"zero retention", Config{Mode: ModePeriodic, Rev: rev, Compact: compact}, "must be positive"},
		{"no store", Config{Mode: ModeRevision, Retention: 1}, "Rev and Compact are required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseRetention(t *testing.T) {
	tests := []struct {
		mode, retention string
		want            time.Duration
		wantErr         string
	}{
		{ModePeriodic, "0", 0, ""},
		{ModePeriodic, "", 0, ""},
		{ModePeriodic, "1", time.Hour, ""},
		{ModePeriodic, "72", 72 * time.Hour, ""},
		{ModePeriodic, "5m", 5 * time.Minute, ""},
		{ModePeriodic, "1.5h", 90 * time.Minute, ""},
		{ModePeriodic, "2s", 2 * time.Second, ""},
		{ModeRevision, "0", 0, ""},
		{ModeRevision, "1000", 1000, ""},
		// etcd reads a duration in revision mode too, as nanoseconds.
		{ModeRevision, "1us", 1000, ""},
		{ModePeriodic, "abc", 0, `error parsing CompactionRetention: time: invalid duration "abc"`},
		{ModePeriodic, "-1", 0, `error parsing CompactionRetention: time: missing unit in duration "-1"`},
		{ModeRevision, "1.5", 0, `error parsing CompactionRetention: time: missing unit in duration "1.5"`},
		{ModePeriodic, "-1h", 0, `--auto-compaction-retention "-1h" must not be negative`},
		{"", "1", 0, "--auto-compaction-mode is undefined"},
	}
	for _, tc := range tests {
		got, err := ParseRetention(tc.mode, tc.retention)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("ParseRetention(%q, %q) = %v, %v; want error %q", tc.mode, tc.retention, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseRetention(%q, %q) = %v, %v; want %v", tc.mode, tc.retention, got, err, tc.want)
		}
	}
}
