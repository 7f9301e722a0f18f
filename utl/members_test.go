package utl

import (
	"strings"
	"testing"

	"github.com/cairnkv/cairn/server/membership"
)

func TestNewClusterDerivesEtcdIDs(t *testing.T) {
	initial, err := parseInitialCluster("b=http://127.0.0.1:2,a=http://127.0.0.1:1,a=http://10.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := newCluster(initial, "tok")
	if err != nil {
		t.Fatal(err)
	}
	a := membership.ComputeMemberID([]string{"http://10.0.0.1:1", "http://127.0.0.1:1"}, "tok", nil)
	b := membership.ComputeMemberID([]string{"http://127.0.0.1:2"}, "tok", nil)
	if cl.memberByName("a").ID != a || cl.memberByName("b").ID != b {
		t.Fatalf("ids %x %x, want %x %x", cl.memberByName("a").ID, cl.memberByName("b").ID, a, b)
	}
	if cl.members[0].ID > cl.members[1].ID {
		t.Fatal("members not ordered by ID")
	}
	if cl.id != membership.ComputeClusterID([]uint64{a, b}) {
		t.Fatal("cluster id")
	}
}

func TestVerifyBootstrapErrors(t *testing.T) {
	initial := map[string][]string{"a": {"http://127.0.0.1:1"}, "b": {"http://127.0.0.1:2"}}
	cases := []struct {
		name string
		urls []string
		init map[string][]string
		want string
	}{
		{"a", []string{"http://127.0.0.1:1"}, initial, ""},
		{"c", []string{"http://127.0.0.1:1"}, initial, `couldn't find local name "c"`},
		{"a", []string{"http://127.0.0.1:9"}, initial, `--initial-cluster has a=http://127.0.0.1:1 but missing from --initial-advertise-peer-urls=http://127.0.0.1:9 (resolved urls: "http://127.0.0.1:9" != "http://127.0.0.1:1")`},
		{"a", []string{"http://127.0.0.1:1", "http://127.0.0.1:9"}, initial, "--initial-advertise-peer-urls has http://127.0.0.1:9 but missing from --initial-cluster=a=http://127.0.0.1:1,a=http://127.0.0.1:9"},
		{"a", []string{"http://127.0.0.1:1"}, map[string][]string{"a": {"http://127.0.0.1:1"}, "b": {"http://127.0.0.1:1"}}, "has duplicate url"},
	}
	for _, c := range cases {
		err := verifyBootstrap(c.name, c.urls, c.init)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("verifyBootstrap(%s, %v) = %v, want %q", c.name, c.urls, err, c.want)
		}
	}
}

// TestPeerURLErrors holds the URL checks restore uses (those of
// membership.ParsePeerURLs) to etcdutl's messages.
func TestPeerURLErrors(t *testing.T) {
	cases := map[string]string{
		"ftp://x:1":            "URL scheme must be http, https, unix, or unixs: ftp://x:1",
		"http://x":             `URL address does not have the form "host:port": http://x`,
		"http://x:1/p":         "URL must not contain a path: http://x:1/p",
		" http://127.0.0.1:1 ": "",
	}
	for in, want := range cases {
		_, err := membership.ParsePeerURLs([]string{in})
		if (want == "") != (err == nil) || (err != nil && err.Error() != want) {
			t.Errorf("ParsePeerURLs(%q) = %v, want %q", in, err, want)
		}
	}
}
