package cairnctl

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tests/harness"
)

// runHeld runs a tool whose stdin stays open until it exits, as a watch
// session's does; the steps end it through a failing exec command.
func runHeld(t *testing.T, bin string, m *member, st step) result {
	t.Helper()
	args := append([]string{"--endpoints=" + m.hostPort}, st.args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(harness.CleanEnv(), st.env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(stdin, st.stdin)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s %q did not exit; stdout so far:\n%s", bin, args, out.String())
	}
	_ = stdin.Close()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.exit = ee.ExitCode()
	}
	return r
}

func (tw twins) checkHeld(t *testing.T, steps []step) {
	t.Helper()
	for _, st := range steps {
		t.Run(strings.Join(st.args, " ")+" <<< "+st.stdin, func(t *testing.T) {
			if e, c := tw.runBoth(t, st, runHeld); e != c {
				t.Errorf("outputs differ\n=== etcdctl:\n%s\n=== cairnctl:\n%s", e, c)
			} else if !strings.Contains(e, st.want) {
				t.Errorf("etcdctl output lacks %q:\n%s", st.want, e)
			}
		})
	}
}

// stopScript writes a command for watch's exec mode that prints the
// event from its environment and fails on the key "stop", which ends the
// watch.
func stopScript(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "stop.sh")
	const body = `echo "$ETCD_WATCH_REVISION $ETCD_WATCH_EVENT_TYPE $ETCD_WATCH_KEY $ETCD_WATCH_VALUE"
[ "$ETCD_WATCH_KEY" != '"stop"' ]
`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWatch(t *testing.T) {
	tw := twins{startTwins(t)}
	stop := stopScript(t)
	tw.checkAll(t, []step{
		s("put", "k1", "v1"), s("put", "k2", "v2"), s("del", "k1"), s("put", "k1", "v 3"), s("put", "stop", "now"),
		// The usage errors come before any watch starts.
		s("watch"), s("watch", "k1", "--"), s("watch", "--prefix", "k1", "k2"),
		{args: []string{"watch", "k1"}, env: []string{"ETCDCTL_WATCH_KEY=k2"}, want: "conflicting environment key"},
		{args: []string{"watch", "k1"}, env: []string{"ETCDCTL_WATCH_RANGE_END=k2"}, want: "ETCDCTL_WATCH_KEY is empty"},
		{args: []string{"watch", "-i"}, want: "error reading watch request line: EOF"},
	})
	// Watches from a past revision get the history in one response, whose
	// header (hence ETCD_WATCH_REVISION) is the current revision, 6.
	tw.checkHeld(t, cat(
		formats(step{args: []string{"watch", "--rev", "1", "--prefix", "", "--", "sh", stop}, want: `6 "PUT" "stop" "now"`}, "simple", "json", "fields", "protobuf"),
		formats(step{args: []string{"watch", "--rev", "1", "k1"}, want: "table not supported as output format"}, "table"),
		[]step{
			{args: []string{"watch", "--rev=2", "--prev-kv", "k1", "z", "--", "sh", stop}, want: `6 "DELETE" "k1" ""`},
			{args: []string{"watch", "--rev", "1", "--", "sh", stop}, env: []string{"ETCDCTL_WATCH_KEY=k", "ETCDCTL_WATCH_RANGE_END=t"}, want: `"PUT" "k2" "v2"`},
			{args: []string{"watch", "-i"}, stdin: "bogus\n\nwatch\nwatch --prefix a b\nwatch --rev 3 k1 z -- sh " + stop + "\n", want: "Invalid command watch --prefix a b"},
			{args: []string{"-w", "json", "watch", "-i"}, stdin: "watch --rev 5 --prefix '' -- sh " + stop + "\n", want: `"PUT" "stop"`},
			{args: []string{"watch", "-i", "--rev", "99"}, stdin: "watch --rev 1 --prefix s -- sh " + stop + "\n", want: `"stop"`},
			{args: []string{"watch", "-i"}, stdin: "watch --nosuch k\n", want: "unknown flag: --nosuch"},
		},
	))
}
