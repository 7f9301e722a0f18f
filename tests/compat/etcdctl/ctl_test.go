package etcdctl

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tests/harness"
)

// ctlBound bounds one etcdctl or etcdutl invocation.
const ctlBound = 30 * time.Second

// result is what one tool invocation produced.
type result struct {
	stdout, stderr string
	exit           int
}

// step is one etcdctl invocation run against both servers.
type step struct {
	name  string
	args  []string // after --endpoints
	stdin string
	// want, if set, must appear in etcd's normalised output. It documents
	// what the step exercises and keeps a step from passing vacuously (for
	// example because both sides reject a misspelt flag).
	want string
	// wantExit is etcd's expected exit status.
	// In args, "{dir}" stands for each server's scratch directory.
	wantExit int
}

// run runs a tool binary with a clean environment.
func run(t *testing.T, stdin string, bin string, args ...string) result {
	t.Helper()
	r, err := harness.Tool{Stdin: stdin, Timeout: ctlBound}.Run(bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return result{stdout: r.Stdout, stderr: r.Stderr, exit: r.Exit}
}

// ctl runs etcdctl against s, with ETCDCTL_API unset.
func ctl(t *testing.T, s *server, stdin string, args ...string) result {
	t.Helper()
	return run(t, stdin, etcdctlBin, append([]string{"--endpoints=" + s.hostPort}, args...)...)
}

// runBoth runs the step against both servers at once.
func (p *pair) runBoth(t *testing.T, st step) (etcd, cairn result) {
	t.Helper()
	var wg sync.WaitGroup
	var res [2]result
	for i, s := range p.both() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = ctl(t, s, st.stdin, s.expand(st.args)...)
		}()
	}
	wg.Wait()
	return res[0], res[1]
}

// check runs st against both servers and fails with a diff if the normalised
// outputs differ. It returns the normalised etcd output.
func (p *pair) check(t *testing.T, st step) string {
	t.Helper()
	e, c := p.runBoth(t, st)
	ne := p.etcd.normalise(e, st.args)
	nc := p.cairn.normalise(c, st.args)
	t.Logf("etcdctl %s (etcd, normalised):\n%s", describe(st), ne)
	if ne != nc {
		t.Errorf("etcdctl %s: outputs differ (-etcd +cairn):\n%s", describe(st), unifiedDiff(ne, nc))
	}
	if e.exit != st.wantExit {
		t.Errorf("etcdctl %s: etcd exited %d, the test expects %d:\n%s", describe(st), e.exit, st.wantExit, ne)
	}
	if st.want != "" && !strings.Contains(ne, st.want) {
		t.Errorf("etcdctl %s: etcd's output lacks %q:\n%s", describe(st), st.want, ne)
	}
	return ne
}

// checkAll runs steps in order, each as a subtest.
func (p *pair) checkAll(t *testing.T, steps []step) {
	t.Helper()
	for _, st := range steps {
		t.Run(st.title(), func(t *testing.T) { p.check(t, st) })
	}
}

// title names the step's subtest: its name, or else its arguments.
func (st step) title() string {
	if st.name != "" {
		return st.name
	}
	return strings.Join(st.args, " ")
}

// scratchTag in arguments stands for the server's scratch directory.
const scratchTag = "{dir}"

func (s *server) expand(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, scratchTag, s.scratch)
	}
	return out
}

// normalise is the package normalise with s's scratch directory and client
// address masked too.
func (s *server) normalise(r result, args []string) string {
	r.stdout = strings.ReplaceAll(r.stdout, s.scratch, scratchTag)
	r.stderr = strings.ReplaceAll(r.stderr, s.scratch, scratchTag)
	return normalise(r, args, s.hostPort)
}

func describe(st step) string {
	var b strings.Builder
	for i, a := range st.args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a == "" || strings.ContainsAny(a, " \t\n\"'") {
			fmt.Fprintf(&b, "%q", a)
		} else {
			b.WriteString(a)
		}
	}
	if st.stdin != "" {
		fmt.Fprintf(&b, " <<< %q", st.stdin)
	}
	return b.String()
}

// unifiedDiff renders a line diff of a and b with every line as context
// (outputs are short), prefixed "-" for etcd only and "+" for cairn only.
func unifiedDiff(a, b string) string {
	x := strings.Split(a, "\n")
	y := strings.Split(b, "\n")
	// lcs[i][j] is the length of the longest common subsequence of x[i:], y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	out.WriteString("--- etcd\n+++ cairn\n")
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out.WriteString("  " + x[i] + "\n")
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			out.WriteString("+ " + y[j] + "\n")
			j++
		default:
			out.WriteString("- " + x[i] + "\n")
			i++
		}
	}
	return out.String()
}
