// Package cairnctl checks that cairnctl prints what etcdctl v3.7.3 prints.
// Every test is differential: two identical fresh cairn members (same name,
// cluster token and advertised peer URL, hence the same member and cluster
// IDs) receive the same sequence of commands, one from the real etcdctl and
// one from cairnctl, and the outputs and exit statuses must agree once
// durations are masked.
package cairnctl

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tests/harness"
)

var cairnBin, cairnctlBin, etcdctlBin string

func TestMain(m *testing.M) {
	os.Exit(harness.Main(m,
		harness.Builds(map[string]*string{"cairn": &cairnBin, "cairnctl": &cairnctlBin}),
		harness.EtcdTools(map[string]*string{"etcdctl": &etcdctlBin})))
}

// member is one running cairn.
type member struct {
	hostPort string
	scratch  string
	// toolEnv is added to the environment of every tool run against the
	// member, before the step's own variables.
	toolEnv []string
}

// startTwins starts two cairn members configured alike, with serverArgs
// added to the flags of both.
func startTwins(t *testing.T, serverArgs ...string) [2]*member {
	t.Helper()
	peer := harness.FreeURL(t)
	var ms [2]*member
	var procs []*harness.Process
	for i := range ms {
		ms[i] = &member{hostPort: harness.FreeAddr(t), scratch: t.TempDir()}
		procs = append(procs, harness.NewMember(t, cairnBin, harness.Flags{
			DataDir:          filepath.Join(t.TempDir(), "data"),
			ClientURL:        "http://" + ms[i].hostPort,
			AdvertisePeerURL: peer,
			Token:            "cairnctl-compat",
			State:            "new",
			Extra:            serverArgs,
		}).Process)
	}
	if err := harness.StartAll(procs...); err != nil {
		t.Fatal(err)
	}
	return ms
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
	args := make([]string, 0, len(st.args)+1)
	args = append(args, "--endpoints="+m.hostPort)
	for _, a := range st.args {
		args = append(args, strings.NewReplacer("{dir}", m.scratch, "{endpoint}", m.hostPort).Replace(a))
	}
	tr, err := harness.Tool{Env: append(slices.Clone(m.toolEnv), st.env...), Stdin: st.stdin, Timeout: 30 * time.Second}.Run(bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	r := result{stdout: tr.Stdout, stderr: tr.Stderr, exit: tr.Exit}
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

// runBoth runs st with etcdctl and cairnctl at once, each against its
// member, through run, and returns both outputs normalised.
func (tw twins) runBoth(t *testing.T, st step, run func(*testing.T, string, *member, step) result) (etcdctl, cairnctl string) {
	t.Helper()
	var res [2]result
	var wg sync.WaitGroup
	for i, bin := range []string{etcdctlBin, cairnctlBin} {
		wg.Go(func() { res[i] = run(t, bin, tw.ms[i], st) })
	}
	wg.Wait()
	return normalise(res[0]), normalise(res[1])
}

func (tw twins) check(t *testing.T, st step) {
	t.Helper()
	e, c := tw.runBoth(t, st, runTool)
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
