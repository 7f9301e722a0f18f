package etcdctl

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tests/harness"
)

// TestDowngrade compares etcdctl downgrade validate/enable/cancel, their
// errors, and the downgrade state endpoint status reports. The steps run
// back to back: both leaders lower the cluster version to the target up to
// 4 s after enable (TestDowngradeLowersClusterVersion covers that).
func TestDowngrade(t *testing.T) {
	p := startPair(t)
	p.checkAll(t, []step{
		{name: "cancel with none", args: []string{"downgrade", "cancel"}, want: "Downgrade cancel success, cluster version 3.7"},
		{name: "validate 3.6", args: []string{"downgrade", "validate", "3.6"}, want: "Downgrade validate success, cluster version 3.7"},
		{name: "validate 3.6.1", args: []string{"downgrade", "validate", "3.6.1"}, want: "Downgrade validate success, cluster version 3.7"},
		{name: "validate 3.5", args: []string{"downgrade", "validate", "3.5"}, want: "invalid downgrade target version", wantExit: 1},
		{name: "validate 3.7", args: []string{"downgrade", "validate", "3.7"}, want: "invalid downgrade target version", wantExit: 1},
		{name: "validate junk", args: []string{"downgrade", "validate", "x.y"}, want: "wrong downgrade target version format", wantExit: 1},
		{name: "enable 3.6", args: []string{"downgrade", "enable", "3.6"}, want: "Downgrade enable success, cluster version 3.7"},
		{name: "status enabled", args: []string{"endpoint", "status", "-w", "table"}, want: "3.6.0"},
		{name: "validate in progress", args: []string{"downgrade", "validate", "3.6"}, want: "downgrade job in progress", wantExit: 1},
		{name: "enable in progress", args: []string{"downgrade", "enable", "3.6"}, want: "downgrade job in progress", wantExit: 1},
		{name: "cancel", args: []string{"downgrade", "cancel"}, want: "Downgrade cancel success"},
		{name: "status cancelled", args: []string{"endpoint", "status", "-w", "json"}},
	})
}

// TestDowngradeLowersClusterVersion checks the leader's version monitor in
// both: after enable the cluster and storage versions drop to the target,
// after cancel they go back up to the server's version.
func TestDowngradeLowersClusterVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the version monitor (up to 2 x 4 s)")
	}
	p := startPair(t)
	for _, phase := range []struct {
		args []string
		want string // cluster and storage version afterwards
	}{
		{[]string{"downgrade", "enable", "3.6"}, "3.6.0"},
		{[]string{"downgrade", "cancel"}, "3.7.0"},
	} {
		for _, s := range p.both() {
			if r := ctl(t, s, "", phase.args...); r.exit != 0 {
				t.Fatalf("%s: %v: exit %d: %s%s", s.kind, phase.args, r.exit, r.stdout, r.stderr)
			}
		}
		for _, s := range p.both() {
			want := map[string]string{"etcdcluster": phase.want, "storage": phase.want}
			var got map[string]string
			if !harness.Poll(30*time.Second, 200*time.Millisecond, func() bool {
				got = versionDoc(t, s)
				return got["etcdcluster"] == want["etcdcluster"] && got["storage"] == want["storage"]
			}) {
				t.Fatalf("%s after %v: /version = %v, want cluster and storage %s", s.kind, phase.args, got, phase.want)
			}
		}
	}
}

// versionDoc is a server's /version document.
func versionDoc(t *testing.T, s *server) map[string]string {
	t.Helper()
	resp, err := http.Get("http://" + s.hostPort + "/version")
	if err != nil {
		t.Fatalf("%s: GET /version: %v", s.kind, err)
	}
	defer resp.Body.Close()
	doc := map[string]string{}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("%s: /version: %v", s.kind, err)
	}
	return doc
}
