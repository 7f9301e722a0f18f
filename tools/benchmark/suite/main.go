// Command suite is what `make bench` runs: it builds cairn and the
// benchmark tool, starts a fresh 1-member and a fresh 3-member cluster of
// real processes on free loopback ports in temporary directories, runs the
// standard suite of benchmark commands against each, and writes a Markdown
// and a JSON summary (with every case's full text and JSON report) to the
// output directory. With BENCH_ETCD=1 it also runs the suite against etcd
// v3.7.3, built from the module proxy as the compatibility tests build it
// (tests/compat/etcdtools), and puts the two servers side by side;
// BENCH_BASE=<binary> adds another cairn build (say, main's) as "base".
//
// The machine is usually shared, so one run says little: -rounds (or
// BENCH_ROUNDS) repeats the whole suite, alternating the servers at each
// cluster size (A B A B), and the report gives each ratio to etcd as the
// median of the rounds' ratios with their range. Latencies and throughput
// come from the benchmark tool's reports and peak RSS from its --rss-pid;
// the suite itself reads /proc around each case for the servers' CPU time
// (ops per server CPU-second moves less with the machine's load than ops/s
// does), the load average, and the CPU that other processes took.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cairnkv/cairn/tests/compat/etcdtools"
	"github.com/cairnkv/cairn/tools/benchmark/cluster"
)

func main() {
	outDir := flag.String("out", "bench-report", "directory for the report (replaced on every run)")
	rounds := flag.Int("rounds", envInt("BENCH_ROUNDS", 1), "how many times to run the whole suite, servers alternating")
	suite := flag.String("suite", suiteStandard, "which cases: "+suiteStandard+" (make bench) or "+suiteWatchScale+" (make bench-watch)")
	members := flag.String("members", "1,3", "cluster sizes to run, comma-separated")
	flag.Parse()
	sizes, err := parseSizes(*members)
	if *rounds < 1 || err != nil {
		fmt.Fprintln(os.Stderr, "bench: -rounds must be at least 1 and -members a list of sizes:", err)
		os.Exit(2)
	}
	opts := options{outDir: *outDir, rounds: *rounds, suite: *suite, sizes: sizes, withEtcd: os.Getenv("BENCH_ETCD") == "1", base: os.Getenv("BENCH_BASE")}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = runSuite(ctx, opts)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type options struct {
	outDir   string
	rounds   int
	suite    string // suiteStandard or suiteWatchScale
	sizes    []int  // cluster sizes, in order
	withEtcd bool
	base     string // a second cairn binary to compare, "" for none
}

// parseSizes reads -members: positive cluster sizes.
func parseSizes(list string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad cluster size %q", f)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// run is one server at one cluster size in one round.
type run struct {
	server  string
	bin     string
	members int
	round   int
}

func (r run) label() string {
	return fmt.Sprintf("%s, %d member%s", r.server, r.members, plural(r.members))
}

// server is a binary under test.
type server struct{ name, bin string }

// result is everything the summary needs.
type result struct {
	Started  time.Time   `json:"started"`
	Duration float64     `json:"duration_seconds"`
	Rounds   int         `json:"rounds"`
	Servers  []string    `json:"servers"`
	Rows     []row       `json:"rows"`
	Memory   []memoryRow `json:"peak_rss"`
}

// memoryRow is the servers' peak RSS over one run's whole suite.
type memoryRow struct {
	Server    string  `json:"server"`
	Members   int     `json:"members"`
	Round     int     `json:"round"`
	PerMember []int64 `json:"per_member_bytes"`
}

func runSuite(ctx context.Context, opts options) error {
	tmp, err := os.MkdirTemp("", "cairn-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cases, freshEach, err := suiteCases(opts.suite)
	if err != nil {
		return err
	}
	if opts.suite == suiteWatchScale {
		// Both the load generator and a member hold one descriptor per
		// connection of the 10,000-connection case, and inherit ours.
		if err := raiseFileLimit(watchScaleConns + 1024); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(opts.outDir); err != nil {
		return err
	}
	servers, bench, err := build(tmp, opts)
	if err != nil {
		return err
	}
	res := &result{Started: time.Now(), Rounds: opts.rounds}
	for _, s := range servers {
		res.Servers = append(res.Servers, s.name)
	}
	for _, r := range schedule(servers, opts.sizes, opts.rounds) {
		if err := runOne(ctx, r, cases, freshEach, bench, tmp, opts.outDir, res); err != nil {
			return err
		}
	}
	res.Duration = time.Since(res.Started).Seconds()
	if err := writeSummary(opts.outDir, res); err != nil {
		return err
	}
	outDir := opts.outDir
	fmt.Fprintf(os.Stderr, "bench: report in %s (%.0fs)\n", filepath.Join(outDir, "report.md"), res.Duration)
	return nil
}

// schedule orders the runs: round by round, each cluster size in turn, the
// servers one after the other at each size, so that a change in the
// machine's load hits every server alike.
func schedule(servers []server, sizes []int, rounds int) []run {
	var runs []run
	for round := 1; round <= rounds; round++ {
		for _, members := range sizes {
			for _, s := range servers {
				runs = append(runs, run{server: s.name, bin: s.bin, members: members, round: round})
			}
		}
	}
	return runs
}

// build compiles cairn and the benchmark tool into dir and, if asked,
// fetches etcd; it returns the servers to run.
func build(dir string, opts options) ([]server, string, error) {
	cairn, bench := filepath.Join(dir, "cairn"), filepath.Join(dir, "benchmark")
	fmt.Fprintf(os.Stderr, "bench: building ./cmd/cairn and ./tools/benchmark\n")
	if err := cluster.Build(dir, "./cmd/cairn", "./tools/benchmark"); err != nil {
		return nil, "", err
	}
	servers := []server{{"cairn", cairn}}
	if opts.base != "" {
		if _, err := os.Stat(opts.base); err != nil {
			return nil, "", fmt.Errorf("BENCH_BASE: %w", err)
		}
		servers = append(servers, server{"base", opts.base})
	}
	if opts.withEtcd {
		fmt.Fprintf(os.Stderr, "bench: building etcd %s (cached after the first time)\n", etcdtools.Version)
		etcd, err := etcdtools.Path("etcd")
		if err != nil {
			return nil, "", err
		}
		servers = append(servers, server{"etcd", etcd})
	}
	return servers, bench, nil
}

// runOne runs every case for r on a fresh cluster (one per case with
// freshEach), stopping it afterwards, so no run sees another's data.
func runOne(ctx context.Context, r run, cases []benchCase, freshEach bool, bench, tmp, outDir string, res *result) error {
	label := fmt.Sprintf("%s, round %d", r.label(), r.round)
	caseDir := filepath.Join(outDir, fmt.Sprintf("%s-%d-r%d", r.server, r.members, r.round))
	if err := os.MkdirAll(caseDir, 0o755); err != nil {
		return err
	}
	groups := [][]benchCase{cases}
	if freshEach {
		groups = nil
		for _, bc := range cases {
			groups = append(groups, []benchCase{bc})
		}
	}
	mem := memoryRow{Server: r.server, Members: r.members, Round: r.round}
	for i, group := range groups {
		dir := filepath.Join(tmp, fmt.Sprintf("%s-%d-r%d-c%d", r.server, r.members, r.round, i))
		peak, err := runGroup(ctx, r, label, group, bench, dir, caseDir, res)
		if err != nil {
			return err
		}
		for j, m := range peak {
			if j == len(mem.PerMember) {
				mem.PerMember = append(mem.PerMember, 0)
			}
			mem.PerMember[j] = max(mem.PerMember[j], m.PeakRSSBytes)
		}
	}
	res.Memory = append(res.Memory, mem)
	return nil
}

// runGroup starts a cluster in dir, runs cases against it and stops it; it
// returns the members' peak RSS.
func runGroup(ctx context.Context, r run, label string, cases []benchCase, bench, dir, caseDir string, res *result) ([]memory, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "bench: starting %s\n", label)
	c, err := cluster.Start(ctx, cluster.Options{Bin: r.bin, Dir: dir, Members: r.members})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	defer c.Stop()
	var peak []memory
	for _, bc := range cases {
		start := time.Now()
		rows, mem, err := runCase(ctx, bench, c, bc, caseDir, r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		fmt.Fprintf(os.Stderr, "bench:   %-18s %5.1fs\n", bc.name, time.Since(start).Seconds())
		res.Rows = append(res.Rows, rows...)
		peak = mem // VmHWM only grows: the last case holds the peak
	}
	if err := c.Alive(); err != nil {
		return nil, errors.Join(fmt.Errorf("%s", label), err)
	}
	return peak, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
