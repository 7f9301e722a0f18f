// Package client_test holds the client library's tests that need running
// members (cairn processes started through tests/harness). They live
// outside the client module so that the client never depends on the
// server.
package client_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/tests/harness"
)

// cairnBin is the cairn binary, built once by TestMain.
var cairnBin string

// TestMain builds cairn, runs the tests and checks that they leave no
// goroutine of the client behind.
func TestMain(m *testing.M) {
	os.Exit(harness.NoLeaks(harness.Main(m, harness.Builds(map[string]*string{"cairn": &cairnBin}))))
}

// readyTimeout only keeps a broken member or client from hanging the test
// binary.
const readyTimeout = 20 * time.Second

// raftTimings are every member's --heartbeat-interval and
// --election-timeout: short, so that a member that stops or is cut off is
// noticed soon, with room for a loaded machine not to miss heartbeats.
// They also set the shortest lease TTL, 1 s.
var raftTimings = []string{"--heartbeat-interval", "50", "--election-timeout", "500"}

// startCluster starts n members as one cluster, each with the extra flags;
// they are stopped when the test ends.
func startCluster(t *testing.T, n int, extra ...string) []*harness.Member {
	t.Helper()
	return startClusterVia(t, n, nil, extra...)
}

// startClusterVia is startCluster where member i advertises advertise(i,
// listen) as its peer URL while listening on listen (nil: the listen URL),
// so that peer traffic can pass through a test proxy. A start that lost a
// port to another process (tests of other packages run at the same time)
// is retried on fresh ports.
func startClusterVia(t *testing.T, n int, advertise func(i int, listen string) string, extra ...string) []*harness.Member {
	t.Helper()
	for attempt := 1; ; attempt++ {
		ms, err := tryStartCluster(t, n, advertise, extra)
		if err == nil {
			return ms
		}
		if attempt == 5 || !slices.ContainsFunc(ms, (*harness.Member).LostPortRace) {
			t.Fatal(err)
		}
		for _, m := range ms {
			m.Kill()
		}
	}
}

// tryStartCluster starts n members on fresh ports. They are launched
// together, since none is ready before a quorum is up.
func tryStartCluster(t *testing.T, n int, advertise func(i int, listen string) string, extra []string) ([]*harness.Member, error) {
	names := harness.Names(n)
	flags := make([]harness.Flags, n)
	advertised := make([]string, n)
	for i := range flags {
		f := harness.Flags{Name: names[i], ClientURL: harness.FreeURL(t), PeerURL: harness.FreeURL(t), State: "new",
			Extra: append(append([]string{}, raftTimings...), extra...)}
		advertised[i] = f.PeerURL
		if advertise != nil {
			f.AdvertisePeerURL = advertise(i, f.PeerURL)
			advertised[i] = f.AdvertisePeerURL
		}
		flags[i] = f
	}
	ms := make([]*harness.Member, n)
	procs := make([]*harness.Process, n)
	for i, f := range flags {
		f.InitialCluster = harness.InitialCluster(names, advertised)
		ms[i] = harness.NewMember(t, cairnBin, f)
		procs[i] = ms[i].Process
	}
	return ms, harness.StartAll(procs...)
}

func startMember(t *testing.T) *harness.Member { return startCluster(t, 1)[0] }

// newMemberClient is the setup of the tests that need one member of their
// own and nothing else: a client of a fresh member and the test's context.
func newMemberClient(t *testing.T) (*client.Client, context.Context) {
	t.Helper()
	return newClient(t, startMember(t).Endpoint()), testCtx(t)
}

// stopMember stops m gracefully; cairn must exit cleanly. An unclean exit
// fails the test but does not end it: the member is gone either way, and
// a test's goroutines still use the cluster.
func stopMember(t *testing.T, m *harness.Member) {
	t.Helper()
	if err := m.Stop(); err != nil {
		t.Errorf("stopping %s: %v", m.Name, err)
	}
}

// restartMember starts m (again) on its data dir and URLs.
func restartMember(t *testing.T, m *harness.Member) {
	t.Helper()
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
}

func urls(members []*harness.Member) []string {
	var out []string
	for _, m := range members {
		out = append(out, m.Endpoint())
	}
	return out
}

// newClient connects to endpoints and closes the client when the test ends.
func newClient(t *testing.T, endpoints ...string) *client.Client {
	t.Helper()
	return harness.CairnClient(t, client.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
}

func testCtx(t *testing.T) context.Context { return harness.Ctx(t, 20*time.Second) }

// must returns v; an error fails the test with a panic (Go does not let a
// two-value call be an argument next to t).
func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("unexpected error: %v", err))
	}
	return v
}

func keys(r *client.GetResponse) string {
	var ks []string
	for _, kv := range r.Kvs {
		ks = append(ks, string(kv.Key))
	}
	return strings.Join(ks, ",")
}
