// Command suite is what `make bench` runs: it builds cairn and the
// benchmark tool, starts a fresh 1-member and a fresh 3-member cluster of
// real processes on free loopback ports in temporary directories, runs the
// standard suite of benchmark commands against each, and writes a Markdown
// and a JSON summary (with every case's full text and JSON report) to the
// output directory. With BENCH_ETCD=1 it also runs the suite against etcd
// v3.7.3, built from the module proxy as the compatibility tests build it
// (tests/compat/etcdtools), and puts the two servers side by side.
//
// The suite owns no measurement of its own: every number comes from the
// benchmark tool's reports, and the servers' peak RSS from its --rss-pid.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cairnkv/cairn/tests/compat/etcdtools"
)

func main() {
	outDir := flag.String("out", "bench-report", "directory for the report (replaced on every run)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runSuite(ctx, *outDir, os.Getenv("BENCH_ETCD") == "1")
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run is one server at one cluster size.
type run struct {
	server  string
	bin     string
	members int
}

// result is everything the summary needs.
type result struct {
	Started  time.Time          `json:"started"`
	Duration float64            `json:"duration_seconds"`
	Rows     []row              `json:"rows"`
	Memory   map[string][]int64 `json:"peak_rss_bytes"` // "cairn, 3 members" -> per member
	Runs     []string           `json:"runs"`
}

func runSuite(ctx context.Context, outDir string, withEtcd bool) error {
	tmp, err := os.MkdirTemp("", "cairn-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.RemoveAll(outDir); err != nil {
		return err
	}
	runs, bench, err := build(tmp, withEtcd)
	if err != nil {
		return err
	}
	res := &result{Started: time.Now(), Memory: map[string][]int64{}}
	for _, r := range runs {
		if err := runOne(ctx, r, bench, tmp, outDir, res); err != nil {
			return err
		}
	}
	res.Duration = time.Since(res.Started).Seconds()
	if err := writeSummary(outDir, res, runs); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: report in %s (%.0fs)\n", filepath.Join(outDir, "report.md"), res.Duration)
	return nil
}

// build compiles cairn and the benchmark tool into dir and, if asked,
// fetches etcd; it returns the runs to make.
func build(dir string, withEtcd bool) ([]run, string, error) {
	cairn, bench := filepath.Join(dir, "cairn"), filepath.Join(dir, "benchmark")
	for _, b := range [][2]string{{cairn, "./cmd/cairn"}, {bench, "./tools/benchmark"}} {
		fmt.Fprintf(os.Stderr, "bench: building %s\n", b[1])
		if out, err := exec.Command("go", "build", "-o", b[0], b[1]).CombinedOutput(); err != nil {
			return nil, "", fmt.Errorf("go build %s: %w\n%s", b[1], err, out)
		}
	}
	runs := []run{{"cairn", cairn, 1}, {"cairn", cairn, 3}}
	if withEtcd {
		fmt.Fprintf(os.Stderr, "bench: building etcd %s (cached after the first time)\n", etcdtools.Version)
		etcd, err := etcdtools.Path("etcd")
		if err != nil {
			return nil, "", err
		}
		runs = append(runs, run{"etcd", etcd, 1}, run{"etcd", etcd, 3})
	}
	return runs, bench, nil
}

// runOne starts a fresh cluster for r, runs every case against it and
// stops it again, so no run sees another's data.
func runOne(ctx context.Context, r run, bench, tmp, outDir string, res *result) error {
	label := fmt.Sprintf("%s, %d member%s", r.server, r.members, plural(r.members))
	res.Runs = append(res.Runs, label)
	dir := filepath.Join(tmp, fmt.Sprintf("%s-%d", r.server, r.members))
	caseDir := filepath.Join(outDir, fmt.Sprintf("%s-%d", r.server, r.members))
	for _, d := range []string{dir, caseDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "bench: starting %s\n", label)
	c, err := startCluster(ctx, r.bin, dir, r.members)
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	defer c.stop()
	var peak []memory
	for _, bc := range standardSuite() {
		start := time.Now()
		rows, mem, err := runCase(ctx, bench, c, bc, caseDir, r)
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		fmt.Fprintf(os.Stderr, "bench:   %-18s %5.1fs\n", bc.name, time.Since(start).Seconds())
		res.Rows = append(res.Rows, rows...)
		peak = mem // VmHWM only grows: the last case holds the peak
	}
	if err := c.alive(); err != nil {
		return errors.Join(fmt.Errorf("%s", label), err)
	}
	for _, m := range peak {
		res.Memory[label] = append(res.Memory[label], m.PeakRSSBytes)
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
