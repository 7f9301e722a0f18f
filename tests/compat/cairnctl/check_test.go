package cairnctl

import (
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnkv/cairn/tests/harness"
)

// checkLineShapes are the lines check perf and check datascale may print,
// each reduced to its shape: the numbers vary from run to run.
var checkLineShapes = []struct {
	re    *regexp.Regexp
	shape string
}{
	{regexp.MustCompile(`^(PASS: Throughput is|FAIL: Throughput too low:) \d+ writes/s$`), "throughput"},
	{regexp.MustCompile(`^(PASS: Slowest request took|Slowest request took too long:) \d+\.\d{6}s$`), "slowest"},
	{regexp.MustCompile(`^(PASS: Stddev is|Stddev too high:) \d+\.\d{6}s$`), "stddev"},
	{regexp.MustCompile(`^(PASS|FAIL)$`), "verdict"},
	{regexp.MustCompile(`^FAIL: (too many errors|ERROR\(.*\) -> \d+)$`), "errors"},
	{regexp.MustCompile(`^Start data scale check for work load \[10000 key-value pairs, 1024 bytes per key-value, 50 concurrent clients\]\.$`), "start"},
	{regexp.MustCompile(`^PASS: Approximate system memory used : -?\d+\.\d\d MB\.$`), "memory"},
}

// checkShape reduces a check's stdout to the shapes of its lines; a line
// of no known shape fails the test.
func checkShape(t *testing.T, r result) string {
	t.Helper()
	var shapes []string
	for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		shape := ""
		for _, s := range checkLineShapes {
			if s.re.MatchString(line) {
				shape = s.shape
			}
		}
		if shape == "" {
			t.Errorf("unexpected line %q in:\n%s\nstderr:\n%s", line, r.stdout, r.stderr)
		}
		if shape != "errors" { // how many errors a loaded machine sees varies
			shapes = append(shapes, shape)
		}
	}
	final := strings.HasSuffix(r.stdout, "FAIL\n")
	if final != (r.exit == 1) {
		t.Errorf("verdict and exit status %d disagree:\n%s", r.exit, r.stdout)
	}
	return strings.Join(shapes, ",")
}

// TestCheck runs check perf (a minute, by etcdctl's design) and check
// datascale at the smallest load. In -short mode only cairnctl runs and
// its output's shape is checked; otherwise etcdctl runs too, against the
// twin, and the shapes must agree.
func TestCheck(t *testing.T) {
	tw := twins{startTwins(t)}
	tw.checkAll(t, []step{
		{args: []string{"check", "perf", "--load", "huge"}, want: "unknown load option huge"},
		{args: []string{"check", "datascale", "--load=tiny"}, want: "unknown load option tiny"},
		s("put", "/etcdctl-check-perf/x", "1"), s("put", "/etcdctl-check-datascale/x", "1"),
		{args: []string{"check", "perf"}, want: "has keys"},
		{args: []string{"check", "datascale"}, want: "has keys"},
		s("del", "--prefix", "/etcdctl-check-"),
	})
	wants := map[string]string{
		"perf":      "throughput,slowest,stddev,verdict",
		"datascale": "start,memory",
	}
	bins := []string{cairnctlBin}
	if !testing.Short() {
		bins = []string{cairnctlBin, etcdctlBin}
	}
	for _, sub := range []string{"perf", "datascale"} {
		t.Run(sub, func(t *testing.T) {
			var wg sync.WaitGroup
			res := make([]result, len(bins))
			for i, bin := range bins {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res[i] = runLong(t, bin, tw.ms[1-i], "check", sub, "--load", "s", "--auto-compact")
				}()
			}
			wg.Wait()
			for i, r := range res {
				out := strings.NewReplacer("Compacting with revision", "", "Compacted with revision", "").Replace(r.stdout)
				r.stdout = regexp.MustCompile(`(?m)^ \d+\n`).ReplaceAllString(out, "")
				if got := checkShape(t, r); got != wants[sub] {
					t.Errorf("%s check %s: shape %s, want %s:\n%s", bins[i], sub, got, wants[sub], r.stdout)
				}
			}
		})
	}
}

// runLong runs a tool for up to three minutes: check perf takes one.
func runLong(t *testing.T, bin string, m *member, args ...string) result {
	t.Helper()
	r, err := harness.Tool{Timeout: 3 * time.Minute}.Run(bin, append([]string{"--endpoints=" + m.hostPort}, args...)...)
	if err != nil {
		t.Error(err)
	}
	return result{stdout: r.Stdout, stderr: r.Stderr, exit: r.Exit}
}
