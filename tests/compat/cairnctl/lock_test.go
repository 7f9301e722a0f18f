package cairnctl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tests/harness"
)

// hangLimit bounds every wait of these tests; it only catches hangs.
const hangLimit = 30 * time.Second

// tool is one of the twins: a binary and the member it talks to.
type tool struct {
	bin string
	m   *member
}

func (tw twins) tools() [2]tool {
	return [2]tool{{etcdctlBin, tw.ms[0]}, {cairnctlBin, tw.ms[1]}}
}

// proc is a long-running etcdctl or cairnctl process.
type proc struct {
	tl         tool
	cmd        *exec.Cmd
	mu         sync.Mutex
	out, errb  bytes.Buffer
	done       chan struct{}
	exit       int
	waitFailed error
}

type procWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w procWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// start runs tl with args ("{dir}" is the member's scratch directory);
// the test's cleanup kills it if the test left it running.
func (tl tool) start(t *testing.T, args ...string) *proc {
	t.Helper()
	full := []string{"--endpoints=" + tl.m.hostPort}
	for _, a := range args {
		full = append(full, strings.ReplaceAll(a, "{dir}", tl.m.scratch))
	}
	p := &proc{tl: tl, cmd: exec.Command(tl.bin, full...), done: make(chan struct{})}
	p.cmd.Env = harness.CleanEnv()
	p.cmd.Stdout, p.cmd.Stderr = procWriter{&p.mu, &p.out}, procWriter{&p.mu, &p.errb}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		err := p.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			p.exit = ee.ExitCode()
		case err != nil:
			p.waitFailed = err
		}
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) stdout() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitLines waits until the process has printed n lines.
func (p *proc) waitLines(t *testing.T, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d lines from %s", n, filepath.Base(p.tl.bin)), func() bool {
		return strings.Count(p.stdout(), "\n") >= n
	})
}

// signal sends sig and waits for the process to end.
func (p *proc) signal(t *testing.T, sig syscall.Signal) result {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	return p.wait(t)
}

// wait waits for the process to end and returns what it printed.
func (p *proc) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(hangLimit):
		t.Fatalf("%s %q did not end", filepath.Base(p.tl.bin), p.cmd.Args)
	}
	if p.waitFailed != nil {
		t.Fatal(p.waitFailed)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := result{stdout: p.out.String(), stderr: p.errb.String(), exit: p.exit}
	r.stdout = strings.ReplaceAll(r.stdout, p.tl.m.hostPort, "<endpoint>")
	r.stderr = strings.ReplaceAll(r.stderr, p.tl.m.hostPort, "<endpoint>")
	return r
}

// eventually polls cond until it holds; the limit only catches hangs.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !harness.Poll(hangLimit, 20*time.Millisecond, cond) {
		t.Fatalf("waiting for %s: gave up", what)
	}
}

// keys lists the keys under prefix, read with the tool itself.
func (tl tool) keys(t *testing.T, prefix string) []string {
	t.Helper()
	r := runTool(t, tl.bin, tl.m, s("get", "--prefix", "--keys-only", prefix))
	if r.exit != 0 {
		t.Fatalf("get %s: %+v", prefix, r)
	}
	var ks []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if l != "" {
			ks = append(ks, l)
		}
	}
	return ks
}

// waitQueued waits until n sessions queue under the lock or election name.
func (tl tool) waitQueued(t *testing.T, name string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d keys under %s/", n, name), func() bool { return len(tl.keys(t, name+"/")) == n })
}

// leaseRE matches a lock or election key: the name, "/" and the session's
// lease ID in hex, which differs between the twins.
var leaseRE = regexp.MustCompile(`(?m)^([A-Za-z0-9]+)/[0-9a-f]+$`)

// transcript is what one tool did in a scenario, lease IDs masked.
type transcript struct{ b strings.Builder }

func (tr *transcript) add(label string, r result) {
	fmt.Fprintf(&tr.b, "=== %s\n%s\n", label, leaseRE.ReplaceAllString(normalise(r), "$1/<lease>"))
}

// compare runs scenario once with etcdctl and once with cairnctl, each
// against its own twin, and requires the same transcript; want must appear
// in etcdctl's, so the scenario cannot pass vacuously.
func (tw twins) compare(t *testing.T, want string, scenario func(t *testing.T, tl tool, tr *transcript)) {
	t.Helper()
	var got [2]string
	// The twins run side by side: a scenario may wait for a lease to lapse.
	t.Run("twins", func(t *testing.T) {
		for i, tl := range tw.tools() {
			t.Run(filepath.Base(tl.bin), func(t *testing.T) {
				t.Parallel()
				var tr transcript
				scenario(t, tl, &tr)
				got[i] = tr.b.String()
			})
		}
	})
	if t.Failed() {
		return
	}
	if got[0] != got[1] {
		t.Errorf("transcripts differ\n=== etcdctl:\n%s\n=== cairnctl:\n%s", got[0], got[1])
	}
	if !strings.Contains(got[0], want) {
		t.Errorf("etcdctl's transcript lacks %q:\n%s", want, got[0])
	}
	t.Logf("transcript:\n%s", got[0])
}

func TestLockAndElectOneShot(t *testing.T) {
	tw := twins{startTwins(t)}
	// The command checks the lease part of the key itself, since the
	// twins' lease IDs differ.
	showEnv := `case ${ETCD_LOCK_KEY#L1/} in ''|*[!0-9a-f]*) echo "bad key $ETCD_LOCK_KEY";; ` +
		`*) echo "key L1/<hex> rev $ETCD_LOCK_REV";; esac`
	tw.checkAll(t, []step{
		{args: []string{"lock"}, want: "lock takes a lock name argument"},
		{args: []string{"lock", "L1", "sh", "-c", "true"}, want: "unknown shorthand flag: 'c' in -c"},
		s("put", "L1", "not the lock"),
		{args: []string{"lock", "L1", "--", "sh", "-c", showEnv}, want: "key L1/<hex> rev 3"},
		{args: []string{"lock", "--ttl", "5", "L1", "--", "sh", "-c", showEnv}, want: "key L1/<hex> rev 5"},
		{args: []string{"lock", "L1", "--", "sh", "-c", "echo out; echo err >&2; exit 3"}, want: "exit 3"},
		{args: []string{"lock", "L1", "/nonexistent/command"}, want: "no such file"},
		{args: []string{"lock", "L1", "--", "sh", "-c", "kill -KILL $$"}, want: "signal: killed"},
		{args: []string{"get", "--prefix", "L1"}, want: "not the lock"},
		{args: []string{"elect"}, want: "elect takes one election name argument"},
		{args: []string{"elect", "a", "b", "c"}, want: "elect takes one election name argument"},
		{args: []string{"elect", "a"}, want: "no proposal argument but -l not set"},
		{args: []string{"elect", "-l", "a", "b"}, want: "proposal given but -l is set"},
		{args: []string{"elect", "--listen", "a", "b"}, want: "proposal given but -l is set"},
		{args: []string{"elect", "--nosuch", "a"}, want: "unknown flag: --nosuch"},
	})
}

func TestLockContention(t *testing.T) {
	tw := twins{startTwins(t)}
	// The first holder waits for a file the test creates once the second
	// locker queues; the second checks that the first's command finished.
	first := `echo first holds; while [ ! -e {dir}/release ]; do sleep 0.02; done; touch {dir}/first-done`
	second := `if [ -e {dir}/first-done ]; then echo second after first; else echo second too early; fi`
	tw.compare(t, "second after first", func(t *testing.T, tl tool, tr *transcript) {
		a := tl.start(t, "lock", "L2", "--", "sh", "-c", first)
		a.waitLines(t, 1)
		b := tl.start(t, "lock", "L2", "--", "sh", "-c", second)
		tl.waitQueued(t, "L2", 2)
		if err := os.WriteFile(filepath.Join(tl.m.scratch, "release"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		tr.add("first", a.wait(t))
		tr.add("second", b.wait(t))
		tr.add("after", runTool(t, tl.bin, tl.m, s("get", "--prefix", "L2")))
	})
}

func TestLockSignals(t *testing.T) {
	tw := twins{startTwins(t)}
	tw.compare(t, "started\nfinished", func(t *testing.T, tl tool, tr *transcript) {
		holder := tl.start(t, "lock", "L3")
		holder.waitLines(t, 2) // the key and its empty value
		waiter := tl.start(t, "lock", "L3")
		tl.waitQueued(t, "L3", 2)
		tr.add("interrupted waiter", waiter.signal(t, syscall.SIGINT))
		tr.add("queue", runTool(t, tl.bin, tl.m, s("get", "--prefix", "--keys-only", "L3")))
		tr.add("interrupted holder", holder.signal(t, syscall.SIGINT))
		tr.add("after", runTool(t, tl.bin, tl.m, s("get", "--prefix", "L3")))

		json := tl.start(t, "-w", "json", "lock", "L3")
		json.waitLines(t, 1)
		tr.add("terminated json holder", maskJSONKey(json.signal(t, syscall.SIGTERM)))

		// A signal to the locker alone leaves its command running, and the
		// lock is released only when the command ends.
		cmd := `echo started; while [ ! -e {dir}/go-on ]; do sleep 0.02; done; echo finished`
		runner := tl.start(t, "lock", "L3", "--", "sh", "-c", cmd)
		runner.waitLines(t, 1)
		if err := runner.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		tr.add("held while the command runs", runTool(t, tl.bin, tl.m, s("get", "--prefix", "--keys-only", "L3")))
		if err := os.WriteFile(filepath.Join(tl.m.scratch, "go-on"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		tr.add("interrupted runner", runner.wait(t))
		tr.add("released", runTool(t, tl.bin, tl.m, s("get", "--prefix", "--keys-only", "L3")))
	})
}

// The JSON of a lock key: the key in base64 holds the lease ID, and the
// lease is the ID itself.
var (
	jsonKeyRE   = regexp.MustCompile(`"key":"[^"]*"`)
	jsonLeaseRE = regexp.MustCompile(`"lease":[0-9]+`)
)

func maskJSONKey(r result) result {
	r.stdout = jsonKeyRE.ReplaceAllString(r.stdout, `"key":"<key>"`)
	r.stdout = jsonLeaseRE.ReplaceAllString(r.stdout, `"lease":<lease>`)
	return r
}

func TestLockSessionLost(t *testing.T) {
	tw := twins{startTwins(t)}
	tw.compare(t, "session expired", func(t *testing.T, tl tool, tr *transcript) {
		p := tl.start(t, "lock", "L4")
		p.waitLines(t, 1)
		lease := strings.TrimPrefix(strings.SplitN(p.stdout(), "\n", 2)[0], "L4/")
		if r := runTool(t, tl.bin, tl.m, s("lease", "revoke", lease)); r.exit != 0 {
			t.Fatalf("lease revoke %s: %+v", lease, r)
		}
		tr.add("lock after its lease is revoked", p.wait(t))
	})
}

func TestElect(t *testing.T) {
	tw := twins{startTwins(t)}
	tw.compare(t, "E1/<lease>\np2", func(t *testing.T, tl tool, tr *transcript) {
		leader := tl.start(t, "elect", "E1", "p1")
		leader.waitLines(t, 2)
		observer := tl.start(t, "elect", "-l", "E1")
		observer.waitLines(t, 2)
		next := tl.start(t, "elect", "E1", "p2")
		tl.waitQueued(t, "E1", 2)
		tr.add("first leader resigns", leader.signal(t, syscall.SIGINT))
		next.waitLines(t, 2)
		observer.waitLines(t, 4)
		tr.add("second leader resigns", next.signal(t, syscall.SIGTERM))
		tr.add("after", runTool(t, tl.bin, tl.m, s("get", "--prefix", "E1")))
		tr.add("observer", observer.signal(t, syscall.SIGINT))
	})
}

func TestElectSessionLost(t *testing.T) {
	tw := twins{startTwins(t)}
	tw.compare(t, "elect: session expired", func(t *testing.T, tl tool, tr *transcript) {
		p := tl.start(t, "elect", "E2", "v")
		p.waitLines(t, 2)
		lease := strings.TrimPrefix(strings.SplitN(p.stdout(), "\n", 2)[0], "E2/")
		if r := runTool(t, tl.bin, tl.m, s("lease", "revoke", lease)); r.exit != 0 {
			t.Fatalf("lease revoke %s: %+v", lease, r)
		}
		tr.add("campaigner after its lease is revoked", p.wait(t))
	})
}
