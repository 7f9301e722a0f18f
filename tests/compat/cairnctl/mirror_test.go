package cairnctl

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tests/harness"
)

// TestMakeMirror mirrors one twin to a destination twin with each tool
// (etcdctl: source 0 to destination 0, cairnctl: 1 to 1), changes the
// sources alike, and compares what arrived.
func TestMakeMirror(t *testing.T) {
	src, dst := twins{startTwins(t)}, twins{startTwins(t)}
	src.checkAll(t, []step{s("put", "/a/1", "one"), s("put", "/a/2", "two"), s("put", "/b/1", "other")})
	dst.checkAll(t, []step{s("put", "/c/old", "kept")})
	var stops []func()
	for i, bin := range []string{etcdctlBin, cairnctlBin} {
		stops = append(stops, startMirror(t, bin, src.ms[i], "--prefix", "/a/", "--dest-prefix", "/c/", dst.ms[i].hostPort))
	}
	waitFor(t, dst, "/c/2")
	src.checkAll(t, []step{s("put", "/a/3", "three"), s("del", "/a/1"), s("put", "/a/2", "TWO"), s("put", "/b/2", "skip"), s("put", "/a/end", "x")})
	waitFor(t, dst, "/c/end")
	for _, stop := range stops {
		stop()
	}
	dst.checkAll(t, cat([]step{{args: []string{"get", "--prefix", "/"}, want: "three"}}, formats(step{args: []string{"get", "--prefix", "/"}, want: `"count":4`}, "json")))
	src.checkAll(t, []step{
		{args: []string{"make-mirror"}, want: "make-mirror takes one destination argument"},
		{args: []string{"make-mirror", "--dest-prefix", "x", "--no-dest-prefix", "127.0.0.1:1"}, want: "cannot be set at the same time"},
		{args: []string{"compaction", "8"}, want: "compacted revision 8"},
		{args: []string{"make-mirror", "--rev", "2", "{endpoint}"}, want: "required revision has been compacted"},
	})
}

// startMirror runs make-mirror in the background; stop ends it.
func startMirror(t *testing.T, bin string, m *member, args ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"--endpoints=" + m.hostPort, "make-mirror"}, args...)...)
	cmd.Env = harness.CleanEnv()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// waitMirrored runs etcdctl with args on each destination until has holds
// for its output at all of them, for up to 30 s, and returns the address
// of a destination where it never held ("" when it held everywhere).
func waitMirrored(t *testing.T, dst twins, has func(stdout string) bool, args ...string) string {
	t.Helper()
	missing := ""
	harness.Poll(30*time.Second, 50*time.Millisecond, func() bool {
		for _, m := range dst.ms {
			if !has(runTool(t, etcdctlBin, m, s(args...)).stdout) {
				missing = m.hostPort
				return false
			}
		}
		missing = ""
		return true
	})
	return missing
}

// waitFor waits until key has arrived at both destinations.
func waitFor(t *testing.T, dst twins, key string) {
	t.Helper()
	if missing := waitMirrored(t, dst, func(out string) bool { return strings.Contains(out, key) }, "get", key); missing != "" {
		t.Fatalf("%s never arrived at %s", key, missing)
	}
}

// TestMakeMirrorDestAuth mirrors into destinations with auth enabled:
// --dest-user/--dest-password authenticate, a wrong password fails alike.
func TestMakeMirrorDestAuth(t *testing.T) {
	src, dst := twins{startTwins(t)}, twins{startTwins(t)}
	src.checkAll(t, []step{s("put", "/a/1", "one")})
	dst.checkAll(t, []step{s("user", "add", "root:pw"), s("auth", "enable")})
	for i, bin := range []string{etcdctlBin, cairnctlBin} {
		startMirror(t, bin, src.ms[i], "--dest-user", "root", "--dest-password", "pw", dst.ms[i].hostPort)
	}
	if missing := waitMirrored(t, dst, func(out string) bool { return strings.Contains(out, "one") }, "--user=root:pw", "get", "/a/1"); missing != "" {
		t.Fatalf("/a/1 never arrived at %s", missing)
	}
	var got [2]result
	for i, bin := range []string{etcdctlBin, cairnctlBin} {
		got[i] = runTool(t, bin, src.ms[i], s("make-mirror", "--dest-user", "root:wrong", dst.ms[i].hostPort))
	}
	// etcdctl's client also logs its failed attempt as JSON; the Error
	// lines and exit codes must agree.
	errLine := func(r result) string { return r.stderr[max(0, strings.LastIndex(r.stderr, "Error:")):] }
	if !strings.Contains(got[0].stderr, "authentication failed") || errLine(got[0]) != errLine(got[1]) || got[0].exit != got[1].exit {
		t.Fatalf("wrong destination password:\netcdctl (exit %d): %q\ncairnctl (exit %d): %q", got[0].exit, got[0].stderr, got[1].exit, got[1].stderr)
	}
}
