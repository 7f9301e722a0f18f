package diskformat

import (
	"fmt"
	"syscall"
	"testing"
)

// handover writes the workload with one implementation, stops it with sig
// and starts the other on the same data dir, which must serve exactly what
// the first one served and then take further writes.
func TestHandover(t *testing.T) {
	tests := []struct {
		from, to kind
		sig      syscall.Signal
		big      bool // write past a WAL segment and wait for the purge
	}{
		{from: cairn, to: etcd, sig: syscall.SIGTERM, big: true},
		{from: cairn, to: etcd, sig: syscall.SIGKILL},
		{from: etcd, to: cairn, sig: syscall.SIGTERM, big: true},
		{from: etcd, to: cairn, sig: syscall.SIGKILL},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s_to_%s_%s", tt.from, tt.to, map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGKILL: "SIGKILL"}[tt.sig])
		if tt.big {
			name += "_after_WAL_purge"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := newMember(t, workloadFlags...)
			m.start(tt.from)
			cli := m.client()
			compactRev := workload(t, cli, "w/", tt.big)
			if tt.big {
				waitPurged(t, m)
			}
			want := capture(t, m, cli, compactRev)
			if snaps := listFiles(t, m.snapDir(), ".snap"); len(snaps) == 0 {
				t.Errorf("%s wrote no .snap file with --snapshot-count 50 after %d revisions", tt.from, want.Rev)
			}
			cli.Close()
			m.stop(tt.sig)

			m.start(tt.to)
			cli = m.client()
			got := capture(t, m, cli, compactRev)
			sameState(t, fmt.Sprintf("%s serving %s's data dir", tt.to, tt.from), want, got, true)
			writesFurther(t, m, cli, want.Rev)
		})
	}
}

// TestRoundTrip runs cairn, then etcd, then cairn again on one data dir,
// each writing its own workload, and checks every handover.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	m := newMember(t, workloadFlags...)
	legs := []kind{cairn, etcd, cairn}
	var prev state
	for i, k := range legs {
		m.start(k)
		cli := m.client()
		if i > 0 {
			got := capture(t, m, cli, prev.CompactRev)
			sameState(t, fmt.Sprintf("leg %d: %s taking over from %s", i, k, legs[i-1]), prev, got, true)
		}
		compactRev := workload(t, cli, fmt.Sprintf("leg%d/", i), false)
		prev = capture(t, m, cli, compactRev)
		cli.Close()
		m.stop(syscall.SIGTERM)
	}
	if want := int64(1 + 3*297); prev.Rev != want {
		// Three workloads of 297 revisions each on top of revision 1.
		t.Errorf("after three legs: revision %d, want %d", prev.Rev, want)
	}
}
