// Command bigstore is what `make bench-big` runs: the big-store benchmark
// of issue 15. It starts a fresh single member of cairn (built from this
// tree) and, with BENCH_ETCD=1, of etcd v3.7.3 (tests/compat/etcdtools),
// writes --keys sequential keys of 16 B with 256 B values twice (two
// versions) from 100 clients over 10 connections, and measures, side by
// side with cairn/etcd ratios:
//
//   - each version's load: ops/s, p50, p99 (the benchmark tool's own
//     report, run as a separate process);
//   - after each version: VmHWM/VmRSS, db file size, Status dbSize and
//     dbSizeInUse, WAL and data-dir size;
//   - restarts (median of --restarts): SIGTERM to exit, exec to the
//     "ready to serve client requests" log line, exec to the first
//     successful linearizable Get, and the RSS at that moment;
//   - compaction of every old revision and defragmentation, each under an
//     open-loop probe (see probe.go) with windows before, during and after
//     the call, the call's duration and the db size after it.
//
// Only one server runs at a time and the servers take turns phase by
// phase (load, each restart, maintenance), so slow drift in the machine's
// load spreads over both. Every phase records the load average and the CPU
// that processes other than the servers and this tool used, so a noisy run
// shows in its own report.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cairnkv/cairn/tests/compat/etcdtools"
	"github.com/cairnkv/cairn/tools/benchmark/cluster"
)

// config is the command line.
type config struct {
	keys       int64
	restarts   int
	skipDefrag bool
	out        string
	withEtcd   bool

	quota         int64
	clients       int
	conns         int
	window        time.Duration // each probe window
	probeInterval time.Duration
	probeKeys     int
	// profileSeconds, if > 0, has each member serve pprof and the run
	// fetch a CPU profile and an execution trace of that many seconds at
	// the start of each maintenance call and of the window after it.
	profileSeconds int

	// Prebuilt binaries; empty means build (cairn, benchmark) or fetch
	// (etcd) them.
	cairnBin, etcdBin, benchBin string
}

func defaultConfig() config {
	return config{
		keys:          1_000_000,
		restarts:      3,
		out:           "bench-big-report",
		quota:         8 << 30,
		clients:       100,
		conns:         10,
		window:        10 * time.Second,
		probeInterval: 2 * time.Millisecond,
		probeKeys:     1000,
	}
}

func (c *config) register(fs *flag.FlagSet) {
	fs.Int64Var(&c.keys, "keys", c.keys, "distinct keys written in each version")
	fs.IntVar(&c.restarts, "restarts", c.restarts, "restarts measured (the report gives their median)")
	fs.BoolVar(&c.skipDefrag, "skip-defrag", c.skipDefrag, "measure compaction but not defragmentation")
	fs.StringVar(&c.out, "out", c.out, "directory for the report (replaced on every run)")
	fs.Int64Var(&c.quota, "quota-backend-bytes", c.quota, "the servers' --quota-backend-bytes")
	fs.IntVar(&c.clients, "clients", c.clients, "concurrent clients of the load")
	fs.IntVar(&c.conns, "conns", c.conns, "gRPC connections the load's clients share")
	fs.DurationVar(&c.window, "probe-window", c.window, "length of the probe's windows before and after a maintenance call")
	fs.DurationVar(&c.probeInterval, "probe-interval", c.probeInterval, "time between two probe puts")
	fs.IntVar(&c.probeKeys, "probe-keys", c.probeKeys, "distinct keys the probe writes in turn")
	fs.IntVar(&c.profileSeconds, "profile-seconds", c.profileSeconds, "if > 0, fetch CPU profiles and execution traces this long at the start of each maintenance call and of the window after it (members run with --enable-pprof)")
	fs.StringVar(&c.cairnBin, "cairn-bin", "", "cairn binary to use instead of building cmd/cairn")
	fs.StringVar(&c.etcdBin, "etcd-bin", "", "etcd binary to use (implies BENCH_ETCD=1) instead of tests/compat/etcdtools'")
	fs.StringVar(&c.benchBin, "benchmark-bin", "", "benchmark binary to use instead of building tools/benchmark")
}

func (c *config) validate() error {
	switch {
	case c.keys < 1:
		return errors.New("--keys must be at least 1")
	case c.restarts < 1:
		return errors.New("--restarts must be at least 1")
	case c.clients < 1 || c.conns < 1:
		return errors.New("--clients and --conns must be at least 1")
	case c.window <= 0 || c.probeInterval <= 0:
		return errors.New("--probe-window and --probe-interval must be positive")
	case c.probeKeys < 1:
		return errors.New("--probe-keys must be at least 1")
	}
	return nil
}

func main() {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("bigstore", flag.ExitOnError)
	cfg.register(fs)
	fs.Parse(os.Args[1:])
	cfg.withEtcd = os.Getenv("BENCH_ETCD") == "1" || cfg.etcdBin != ""
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-big:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg, logf)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-big:", err)
		os.Exit(1)
	}
}

// logf reports progress on stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-big: "+format+"\n", args...)
}

// run builds what it needs, runs every phase and writes the report.
func run(ctx context.Context, cfg config, log func(string, ...any)) error {
	tmp, err := os.MkdirTemp("", "cairn-bench-big")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.RemoveAll(cfg.out); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	if err := resolveBinaries(&cfg, tmp, log); err != nil {
		return err
	}
	r := newRunner(cfg, tmp, log)
	runErr := r.runAll(ctx)
	r.res.Duration = time.Since(r.res.Started).Seconds()
	if err := writeReport(cfg.out, r.res); err != nil {
		return errors.Join(runErr, err)
	}
	log("report in %s (%.0fs)", filepath.Join(cfg.out, "report.md"), r.res.Duration)
	return runErr
}

// resolveBinaries builds cairn and the benchmark tool and finds etcd,
// unless the flags name them.
func resolveBinaries(cfg *config, tmp string, log func(string, ...any)) error {
	binDir := filepath.Join(tmp, "bin")
	var pkgs []string
	for _, b := range []struct {
		bin *string
		pkg string
	}{{&cfg.cairnBin, "github.com/cairnkv/cairn/cmd/cairn"}, {&cfg.benchBin, "github.com/cairnkv/cairn/tools/benchmark"}} {
		if *b.bin == "" {
			*b.bin = filepath.Join(binDir, path.Base(b.pkg))
			pkgs = append(pkgs, b.pkg)
		}
	}
	if len(pkgs) > 0 {
		log("building %s", strings.Join(pkgs, " and "))
		if err := cluster.Build(binDir, pkgs...); err != nil {
			return err
		}
	}
	if !cfg.withEtcd || cfg.etcdBin != "" {
		return nil
	}
	log("building etcd %s (cached after the first time)", etcdtools.Version)
	etcd, err := etcdtools.Path("etcd")
	cfg.etcdBin = etcd
	return err
}
