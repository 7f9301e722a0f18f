package ctl

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fakeClock advances by step each time it is read.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

func TestTransferProgress(t *testing.T) {
	cases := []struct {
		name     string
		expected int64
		writes   []int
		line     string
		summary  string
	}{
		{"known size", 4_000_000, []int{1_000_000, 1_000_000}, "Saving snapshot: 2.0 MB of 4.0 MB (50%), 2.0 MB/s", "Snapshot of 2.0 MB received in 2s\n"},
		{"unknown size", 0, []int{500_000}, "Saving snapshot: 500 kB, 500 kB/s", "Snapshot of 500 kB received in 2s\n"},
		{"more than expected", 1000, []int{3000}, "Saving snapshot: 3.0 kB of 1.0 kB (100%), 3.0 kB/s", "Snapshot of 3.0 kB received in 2s\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			clock := &fakeClock{t: time.Unix(0, 0), step: time.Second}
			p := newTransferProgress(&out, c.expected, clock.now)
			for _, n := range c.writes {
				p.Write(make([]byte, n))
			}
			p.draw()
			p.Finish()
			got := out.String()
			if !strings.Contains(got, "\r\033[K"+c.line) {
				t.Errorf("progress %q, want line %q", got, c.line)
			}
			if !strings.HasSuffix(got, "\r\033[K"+c.summary) {
				t.Errorf("progress %q, want summary %q", got, c.summary)
			}
		})
	}
}
