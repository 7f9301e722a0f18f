package robustness

import (
	"slices"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func TestSelectFaults(t *testing.T) {
	names := func(fs []fault) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.name)
		}
		return out
	}
	membership := []string{"member-replace", "member-replace-leader", "learner-promote"}
	for _, tc := range []struct {
		only       string
		failpoints bool
		want       []string
	}{
		{only: "membership", want: membership},
		{only: " kill , learner-promote", want: []string{"kill", "learner-promote"}},
		{only: "failpoint", failpoints: false, want: nil},
		{only: "failpoint,membership", failpoints: true, want: append([]string{"failpoint"}, membership...)},
		{only: "no-such-fault", want: nil},
	} {
		if got := names(selectFaults(tc.failpoints, tc.only)); !slices.Equal(got, tc.want) {
			t.Errorf("selectFaults(%v, %q) = %v, want %v", tc.failpoints, tc.only, got, tc.want)
		}
	}
	all := selectFaults(false, "")
	if len(all) != len(faults)-3 || !slices.Contains(names(all), "learner-promote") || !slices.Contains(names(all), "defrag") {
		t.Errorf("selectFaults(false, \"\") = %v: want every fault but the three failpoint ones", names(all))
	}
}

func TestAvailability(t *testing.T) {
	s := int64(time.Second)
	put := &input{kind: opPut}
	recs := []record{
		{in: put, out: &output{}, call: 1 * s, ret: 2 * s},                   // before the fault
		{in: put, out: &output{}, call: 10 * s, ret: 11 * s},                 // acknowledged
		{in: &input{kind: opGet}, out: &output{}, call: 12 * s, ret: 12 * s}, // a read: not counted
		{in: put, out: &output{unknown: true}, call: 12 * s, ret: 15 * s},    // failed
		{in: &input{kind: opDelete}, out: &output{}, call: 13 * s, ret: 14 * s},
		{in: put, out: &output{}, call: 30 * s, ret: 31 * s}, // after the traffic ended
	}
	ev := faultEvent{start: 10 * s, end: 40 * s}
	got := availability(recs, ev, 20*s)
	want := "2 acknowledged, 1 failed (33.3%), longest stretch without an acknowledged write 6s"
	if got != want {
		t.Errorf("availability = %q, want %q", got, want)
	}
}

func TestInitialClusterAndArgs(t *testing.T) {
	ms := []*pb.Member{
		{ID: 1, Name: "m0", PeerURLs: []string{"http://a"}},
		{ID: 7, PeerURLs: []string{"http://b"}},
	}
	if got, want := initialCluster(ms, 7, "m1"), "m0=http://a,m1=http://b"; got != want {
		t.Errorf("initialCluster = %q, want %q", got, want)
	}
	args := []string{"--name", "m0", "--initial-cluster-state", "new"}
	args = setArg(args, "--initial-cluster-state", "existing")
	args = setArg(args, "--data-dir", "d")
	if want := []string{"--name", "m0", "--initial-cluster-state", "existing", "--data-dir", "d"}; !slices.Equal(args, want) {
		t.Errorf("setArg: %v, want %v", args, want)
	}
	if got := argValue(args, "--data-dir"); got != "d" {
		t.Errorf("argValue(--data-dir) = %q", got)
	}
}
