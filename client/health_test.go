package client

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/metadata"
)

func names(eps []endpoint) string {
	var out []string
	for _, ep := range eps {
		out = append(out, ep.raw)
	}
	return strings.Join(out, ",")
}

func TestUsableEndpoints(t *testing.T) {
	eps, _ := parseEndpoints([]string{"a:1", "b:1", "c:1"})
	healthy := memberHealth{ok: true, hasLeader: true, index: 10}
	var hs healthState
	check := func(name string, health map[string]memberHealth, want string) {
		t.Helper()
		if got := names(hs.usable(eps, health)); got != want {
			t.Errorf("%s: usable %q, want %q", name, got, want)
		}
	}
	check("all healthy", map[string]memberHealth{"a:1": healthy, "b:1": healthy, "c:1": healthy}, "a:1,b:1,c:1")
	check("down, learner and leaderless", map[string]memberHealth{
		"a:1": {}, "b:1": {ok: true, learner: true, hasLeader: true}, "c:1": healthy,
	}, "c:1")
	hs = healthState{}
	check("first look", map[string]memberHealth{"a:1": healthy, "b:1": healthy, "c:1": healthy}, "a:1,b:1,c:1")
	stalled := healthy
	advanced := memberHealth{ok: true, hasLeader: true, index: 20}
	check("a stalls while the cluster advances", map[string]memberHealth{
		"a:1": stalled, "b:1": advanced, "c:1": advanced,
	}, "b:1,c:1")
	check("idle cluster", map[string]memberHealth{
		"a:1": advanced, "b:1": advanced, "c:1": advanced,
	}, "a:1,b:1,c:1")
	check("nothing usable keeps every endpoint", map[string]memberHealth{}, "a:1,b:1,c:1")
	learner := memberHealth{ok: true, learner: true, hasLeader: true, index: 30}
	leaderless := memberHealth{ok: true, index: 30}
	check("checks timed out: a learner stays out", map[string]memberHealth{
		"a:1": learner, "b:1": {}, "c:1": {},
	}, "b:1,c:1")
	check("checks timed out: a leaderless member stays out", map[string]memberHealth{
		"a:1": leaderless, "b:1": {}, "c:1": {},
	}, "b:1,c:1")
	hs = healthState{prevIndex: map[string]uint64{"a:1": 30, "b:1": 30}, prevMax: 30}
	check("stalled, timed out, leaderless: the first two may be fine", map[string]memberHealth{
		"a:1": {ok: true, hasLeader: true, index: 30}, "b:1": {}, "c:1": {ok: true, index: 40},
	}, "a:1,b:1")
	check("only learners and leaderless members: every endpoint", map[string]memberHealth{
		"a:1": learner, "b:1": leaderless, "c:1": leaderless,
	}, "a:1,b:1,c:1")
}

// TestHealthCheckOnByDefault checks that a zero Config checks health at
// the default interval (so reads require a leader), that an explicit
// interval is kept, and that a negative one turns the checks off.
func TestHealthCheckOnByDefault(t *testing.T) {
	cases := []struct {
		name          string
		set           time.Duration
		want          time.Duration
		requireLeader bool
	}{
		{"zero takes the default", 0, DefaultHealthCheckInterval, true},
		{"explicit interval kept", 250 * time.Millisecond, 250 * time.Millisecond, true},
		{"negative turns it off", -1, -1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := &Client{cfg: Config{HealthCheckInterval: c.set}.withDefaults()}
			if got := cl.cfg.HealthCheckInterval; got != c.want {
				t.Fatalf("HealthCheckInterval = %v, want %v", got, c.want)
			}
			ctx := cl.requireLeaderForReads(context.Background(), "/etcdserverpb.KV/Range", true)
			md, _ := metadata.FromOutgoingContext(ctx)
			if got := len(md.Get(rpctypes.MetadataRequireLeaderKey)) > 0; got != c.requireLeader {
				t.Fatalf("reads require a leader = %v, want %v", got, c.requireLeader)
			}
		})
	}
}
