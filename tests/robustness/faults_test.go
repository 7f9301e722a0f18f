package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"time"
)

// faultEvent is one injected fault, for the report and the visualization.
type faultEvent struct {
	name       string
	member     int
	start, end int64 // test clock (ns since the history started)
	detail     string
	err        error // recovery failed
}

func (f faultEvent) String() string {
	s := fmt.Sprintf("%s m%d [%.2fs, %.2fs]", f.name, f.member, float64(f.start)/1e9, float64(f.end)/1e9)
	if f.detail != "" {
		s += ": " + f.detail
	}
	return s
}

// fault is a kind of failure: inject breaks member i, and the returned
// function undoes it.
type fault struct {
	name string
	// leader: pick the current leader as the target instead of a random
	// member.
	leader bool
	// failpoints: the fault needs members that serve /failpoints.
	failpoints bool
	// membership: the fault reconfigures the cluster
	// (faults_member_test.go); the name "membership" in
	// $CAIRN_ROBUSTNESS_FAULTS selects all of them.
	membership bool
	// inject may note what it did in ev.detail.
	inject func(c *cluster, i int, rng *rand.Rand, ev *faultEvent) (undo func() error)
}

var faults = []fault{
	{name: "kill", inject: killFault},
	{name: "kill-leader", leader: true, inject: killFault},
	{name: "isolate", inject: isolateFault},
	{name: "isolate-leader", leader: true, inject: isolateFault},
	{name: "pause", inject: pauseFault},
	{name: "pause-leader", leader: true, inject: pauseFault},
	{name: "slow-links", inject: delayFault},
	{name: "failpoint", failpoints: true, inject: failpointFault},
	{name: "failpoint-leader", leader: true, failpoints: true, inject: failpointFault},
	{name: "disk-full", inject: diskFullFault},
	{name: "defrag", inject: defragFault},
	{name: "failpoint-defrag", failpoints: true, inject: defragCrashFault},
	{name: "member-replace", membership: true, inject: memberReplaceFault},
	{name: "member-replace-leader", leader: true, membership: true, inject: memberReplaceFault},
	{name: "learner-promote", membership: true, inject: learnerFault},
}

// membershipFaults is the $CAIRN_ROBUSTNESS_FAULTS name of all membership
// faults.
const membershipFaults = "membership"

// selectFaults returns the faults named in the comma-separated list only
// (all if it is empty), without those that need failpoints unless the
// server has them, in a fixed order, so that a seed picks the same
// schedule for the same server.
func selectFaults(failpoints bool, only string) []fault {
	names := map[string]bool{}
	for _, name := range strings.Split(only, ",") {
		if name = strings.TrimSpace(name); name != "" {
			names[name] = true
		}
	}
	var out []fault
	for _, f := range faults {
		named := len(names) == 0 || names[f.name] || (f.membership && names[membershipFaults])
		if named && (!f.failpoints || failpoints) {
			out = append(out, f)
		}
	}
	return out
}

func killFault(c *cluster, i int, _ *rand.Rand, _ *faultEvent) func() error {
	c.procs[i].kill()
	return c.procs[i].start
}

func isolateFault(c *cluster, i int, _ *rand.Rand, _ *faultEvent) func() error {
	c.isolate(i)
	return func() error { c.heal(i); return nil }
}

func pauseFault(c *cluster, i int, _ *rand.Rand, _ *faultEvent) func() error {
	c.procs[i].signal(syscall.SIGSTOP)
	return func() error { c.procs[i].signal(syscall.SIGCONT); return nil }
}

func delayFault(c *cluster, i int, rng *rand.Rand, _ *faultEvent) func() error {
	d := time.Duration(50+rng.IntN(150)) * time.Millisecond
	c.proxies[i].DelayTx(d, d/4)
	c.proxies[i].DelayRx(d, d/4)
	return func() error {
		c.proxies[i].UndelayTx()
		c.proxies[i].UndelayRx()
		c.proxies[i].ResetConnections()
		return nil
	}
}

// injectFaults injects one fault at a time, chosen by rng, until ctx is
// done: wait a little, break a member for one to three seconds, undo the
// fault and wait until the members agree on a leader again. now is the
// test clock; only means the faults named there (selectFaults).
func injectFaults(ctx context.Context, c *cluster, only string, rng *rand.Rand, now func() int64, logf func(string, ...any)) []faultEvent {
	var events []faultEvent
	available := selectFaults(c.failpoints, only)
	if len(available) == 0 {
		return []faultEvent{{name: "none", err: fmt.Errorf("no fault this server supports matches %q", only)}}
	}
	sleep := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	for {
		if !sleep(time.Duration(500+rng.IntN(1500)) * time.Millisecond) {
			return events
		}
		f := available[rng.IntN(len(available))]
		hold := time.Duration(1000+rng.IntN(2000)) * time.Millisecond
		target := rng.IntN(len(c.procs))
		if f.leader {
			if l := c.leader(); l >= 0 {
				target = l
			}
		}
		ev := faultEvent{name: f.name, member: target, start: now()}
		logf("fault: %s on m%d for %v", f.name, target, hold)
		undo := f.inject(c, target, rng, &ev)
		time.Sleep(hold) // always undo, even when the traffic has stopped
		ev.err = undo()
		ev.end = now()
		if ev.detail != "" {
			logf("fault %s", ev)
		}
		if ev.err == nil {
			if _, err := c.waitLeader(recoverTimeout); err != nil {
				ev.err = err
			}
		}
		events = append(events, ev)
		if ev.err != nil {
			logf("fault %s: recovery failed: %v", ev, ev.err)
			return events
		}
	}
}
