// Package cairnctl checks that cairnctl prints what etcdctl v3.7.3 prints.
// Every test is differential: two identical fresh cairn members (same name,
// cluster token and advertised peer URL, hence the same member and cluster
// IDs) receive the same sequence of commands, one from the real etcdctl and
// one from cairnctl, and the outputs and exit statuses must agree once
// durations are masked.
package cairnctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tests/compat/etcdtools"
)

var cairnBin, cairnctlBin, etcdctlBin string

func TestMain(m *testing.M) { os.Exit(setup(m)) }

func setup(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cairn-compat-cairnctl-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cairnBin = filepath.Join(dir, "cairn")
	cairnctlBin = filepath.Join(dir, "cairnctl")
	for bin, pkg := range map[string]string{cairnBin: "./cmd/cairn", cairnctlBin: "./cmd/cairnctl"} {
		b := exec.Command("go", "build", "-o", bin, "github.com/cairnkv/cairn/"+strings.TrimPrefix(pkg, "./"))
		b.Stdout, b.Stderr = os.Stderr, os.Stderr
		if err := b.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building", pkg, "failed:", err)
			return 1
		}
	}
	if etcdctlBin, err = etcdtools.Path("etcdctl"); err != nil {
		fmt.Fprintln(os.Stderr, "building etcdctl failed:", err)
		return 1
	}
	return m.Run()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// member is one running cairn.
type member struct {
	hostPort string
	scratch  string
	cmd      *exec.Cmd
	log      *bytes.Buffer
	mu       *sync.Mutex
	// toolEnv is added to the environment of every tool run against the
	// member, before the step's own variables.
	toolEnv []string
}

// startTwins starts two cairn members configured alike, with serverArgs
// added to the flags of both.
func startTwins(t *testing.T, serverArgs ...string) [2]*member {
	t.Helper()
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	var ms [2]*member
	for i := range ms {
		m := &member{hostPort: fmt.Sprintf("127.0.0.1:%d", freePort(t)), scratch: t.TempDir(), log: &bytes.Buffer{}, mu: &sync.Mutex{}}
		args := []string{
			"--data-dir", filepath.Join(t.TempDir(), "data"),
			"--listen-client-urls", "http://" + m.hostPort,
			"--advertise-client-urls", "http://" + m.hostPort,
			"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
			"--name", "m0",
			"--initial-advertise-peer-urls", peer,
			"--initial-cluster", "m0=" + peer,
			"--initial-cluster-token", "cairnctl-compat",
			"--initial-cluster-state", "new",
		}
		m.cmd = exec.Command(cairnBin, append(args, serverArgs...)...)
		w := &lockedWriter{m.mu, m.log}
		m.cmd.Stdout, m.cmd.Stderr = w, w
		m.cmd.Env = cleanEnv()
		if err := m.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = m.cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = m.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = m.cmd.Process.Kill()
				<-done
			}
			if t.Failed() && os.Getenv("CAIRNCTL_TEST_LOGS") != "" {
				m.mu.Lock()
				t.Logf("cairn log:\n%s", m.log.String())
				m.mu.Unlock()
			}
		})
		ms[i] = m
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, m := range ms {
		for {
			m.mu.Lock()
			ready := strings.Contains(m.log.String(), "ready to serve client requests")
			m.mu.Unlock()
			if ready {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cairn at %s not ready", m.hostPort)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return ms
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") && !strings.HasPrefix(kv, "ETCDCTL_") {
			env = append(env, kv)
		}
	}
	return env
}

type result struct {
	stdout, stderr string
	exit           int
}

// step is one command run by both tools.
type step struct {
	args  []string
	stdin string
	env   []string
	// want must appear in etcdctl's output, so a step cannot pass vacuously.
	want string
}

func runTool(t *testing.T, bin string, m *member, st step) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := make([]string, 0, len(st.args)+1)
	args = append(args, "--endpoints="+m.hostPort)
	for _, a := range st.args {
		args = append(args, strings.NewReplacer("{dir}", m.scratch, "{endpoint}", m.hostPort).Replace(a))
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(cleanEnv(), m.toolEnv...), st.env...)
	cmd.Stdin = strings.NewReader(st.stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		r.exit = ee.ExitCode()
	default:
		t.Fatalf("%s %q: %v", bin, args, err)
	}
	r.stdout = strings.ReplaceAll(r.stdout, m.hostPort, "<endpoint>")
	r.stderr = strings.ReplaceAll(r.stderr, m.hostPort, "<endpoint>")
	r.stdout = strings.ReplaceAll(r.stdout, m.scratch, "{dir}")
	return r
}

var (
	tookRE = regexp.MustCompile(`took( =)? [0-9.]+[a-zµ]+`)
	// etcdctl logs with zap to stderr in a few commands (snapshot save).
	zapRE = regexp.MustCompile(`(?m)^\{"level".*\n`)
	// The stored JSON "took" of endpoint health.
	tookJSONRE   = regexp.MustCompile(`"took":"[^"]*"`)
	tookFieldsRE = regexp.MustCompile(`"Took" : \S+`)
	// A duration in a table cell; table widths then vary, so borders and
	// padding are squeezed.
	durCellRE = regexp.MustCompile(`│ +[0-9.]+(ns|µs|ms|s) │`)
	borderRE  = regexp.MustCompile(`─+`)
	spacesRE  = regexp.MustCompile(` +`)
)

func normalise(r result) string {
	s := fmt.Sprintf("exit %d\n--- stdout\n%s\n--- stderr\n%s", r.exit, r.stdout, zapRE.ReplaceAllString(r.stderr, ""))
	// etcdctl follows a usage error with the command's help; cairnctl
	// prints only the error line.
	if i := strings.Index(s, "\nUsage:\n"); i >= 0 {
		s = s[:i+1]
	}
	s = tookRE.ReplaceAllString(s, "took <d>")
	s = durCellRE.ReplaceAllString(s, "│ <d> │")
	s = borderRE.ReplaceAllString(s, "─")
	s = spacesRE.ReplaceAllString(s, " ")
	s = tookJSONRE.ReplaceAllString(s, `"took":"<d>"`)
	s = tookFieldsRE.ReplaceAllString(s, `"Took" : <d>`)
	return s
}

// twins runs steps with etcdctl against one member and cairnctl against
// the other.
type twins struct{ ms [2]*member }

func (tw twins) check(t *testing.T, st step) {
	t.Helper()
	var res [2]result
	var wg sync.WaitGroup
	for i, bin := range []string{etcdctlBin, cairnctlBin} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = runTool(t, bin, tw.ms[i], st)
		}()
	}
	wg.Wait()
	e, c := normalise(res[0]), normalise(res[1])
	if e != c {
		t.Errorf("%q <<< %q: outputs differ\n=== etcdctl:\n%s\n=== cairnctl:\n%s", st.args, st.stdin, e, c)
	}
	if st.want != "" && !strings.Contains(e, st.want) {
		t.Errorf("%q: etcdctl output lacks %q:\n%s", st.args, st.want, e)
	}
}

func (tw twins) checkAll(t *testing.T, steps []step) {
	t.Helper()
	for _, st := range steps {
		t.Run(strings.Join(st.args, " "), func(t *testing.T) { tw.check(t, st) })
	}
}

func s(args ...string) step { return step{args: args} }

// formats expands st into one step per output format.
func formats(st step, fs ...string) []step {
	var out []step
	for _, f := range fs {
		c := st
		c.args = append([]string{"-w", f}, st.args...)
		out = append(out, c)
	}
	return out
}
