// Command benchmark is a load generator for any server that speaks etcd's v3
// gRPC API (cairn or etcd itself). It sends a fixed number of requests from a
// pool of concurrent clients and reports throughput, a latency histogram,
// latency percentiles and errors by message.
//
// The tool owns only the client side of a measurement: it talks to the raw
// generated gRPC stubs so that no client-library retry or balancing logic
// hides in the numbers. Latency is measured per request from just before the
// RPC is sent until its response (or error) arrives; failed requests are
// counted and listed but kept out of the latency statistics. The arithmetic
// lives in the stats subpackage.
//
// Usage:
//
//	benchmark [global flags] put     [--total N] [--key-size 8] [--val-size 256] [--key-space-size 1] [--sequential-keys]
//	benchmark [global flags] range   <key> [end] [--total N] [--consistency l|s] [--limit 0]
//	benchmark [global flags] txn-put [--total N] [--txn-ops 1] [--key-size 8] [--val-size 256] [--key-space-size 1]
//	benchmark [global flags] watch-latency [--watchers 100] [--streams 10] [--put-total 1000] [--put-rate 0] [--key-size 8] [--val-size 256] [--key-space-size 1]
//	benchmark [global flags] watch [watch-latency flags] [--slow-watchers 0] [--slow-delay 10ms]
//	benchmark [global flags] lease-keepalive [--total N] [--ttl 60]
//	benchmark [global flags] txn-mixed [--total N] [--rw-ratio 1] [--key-size 8] [--val-size 256] [--key-space-size 1] [--consistency l|s] [--end-range KEY] [--limit 1000]
//	benchmark [global flags] watch-get [--watchers 1000] [--streams 1] [--events 8] [--get-total N] [--consistency s]
//	benchmark [global flags] stm [--total N] [--isolation r|c|s|ss] [--keys 1] [--keys-per-txn 1] [--txn-wr-percent 50] [--val-size 8]
//
// Global flags may also follow the command name.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cairnkv/cairn/tools/benchmark/stats"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// errUsage marks mistakes on the command line, reported with exit status 2.
var errUsage = errors.New("usage")

func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "benchmark:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "benchmark:", err)
		return 1
	}
}

// globalConfig holds the flags shared by every command.
type globalConfig struct {
	endpoints    string
	clients      int
	conns        int
	dialTimeout  time.Duration
	targetLeader bool
	precise      bool
	reportJSON   string

	rate           float64 // requests per second over all clients; 0 = no cap
	allMembers     bool
	noProgress     bool
	rssPIDs        string
	rssProcessName string

	// Set by runBenchmark before the command runs: the endpoints the load
	// goes to (after --target-leader or --all-members) and the server
	// processes whose memory is reported.
	resolved []string
	pids     []int
}

// defaultSampleLimit bounds how many latencies are kept for percentiles when
// --precise is off: large enough that runs up to this size are exact, small
// enough (8 MiB) that very long runs do not grow without bound.
const defaultSampleLimit = 1 << 20

// register binds the global flags to fs. It is called on the top-level flag
// set and on each command's, so global flags work on either side of the
// command name.
func (g *globalConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&g.endpoints, "endpoints", g.endpoints, "comma-separated gRPC endpoints (host:port)")
	fs.IntVar(&g.clients, "clients", g.clients, "number of concurrent clients")
	fs.IntVar(&g.conns, "conns", g.conns, "number of gRPC connections; clients share them round-robin")
	fs.DurationVar(&g.dialTimeout, "dial-timeout", g.dialTimeout, "time allowed to establish each connection")
	fs.BoolVar(&g.targetLeader, "target-leader", g.targetLeader, "send all load to the leader found via Maintenance.Status")
	fs.BoolVar(&g.precise, "precise", g.precise, "keep every latency (no sampling) and print nanosecond precision")
	fs.StringVar(&g.reportJSON, "report-json", g.reportJSON, "also write the report as JSON to this file")
	fs.Float64Var(&g.rate, "rate", g.rate, "maximum requests per second over all clients (0 = no limit)")
	fs.BoolVar(&g.allMembers, "all-members", g.allMembers, "spread connections over every voting member found via MemberList")
	fs.BoolVar(&g.noProgress, "no-progress", g.noProgress, "do not draw a progress bar on stderr (it is off anyway when stderr is not a terminal)")
	fs.StringVar(&g.rssPIDs, "rss-pid", g.rssPIDs, "comma-separated PIDs of server processes on this machine whose peak RSS (VmHWM) to report")
	fs.StringVar(&g.rssProcessName, "rss-process-name", g.rssProcessName, "report the peak RSS of every process with this command name (e.g. cairn)")
}

func defaultGlobalConfig() *globalConfig {
	return &globalConfig{
		endpoints:   "127.0.0.1:2379",
		clients:     1,
		conns:       1,
		dialTimeout: 2 * time.Second,
	}
}

func (g *globalConfig) validate() error {
	if g.clients < 1 || g.conns < 1 {
		return fmt.Errorf("%w: --clients and --conns must be at least 1", errUsage)
	}
	if g.dialTimeout <= 0 {
		return fmt.Errorf("%w: --dial-timeout must be positive", errUsage)
	}
	if len(g.endpointList()) == 0 {
		return fmt.Errorf("%w: --endpoints is empty", errUsage)
	}
	if g.rate < 0 {
		return fmt.Errorf("%w: --rate must not be negative", errUsage)
	}
	if g.targetLeader && g.allMembers {
		return fmt.Errorf("%w: --target-leader and --all-members exclude each other", errUsage)
	}
	_, err := parsePIDs(g.rssPIDs)
	return err
}

// newLimiter returns the --rate limiter of one run (nil when unlimited).
func (g *globalConfig) newLimiter() *limiter { return newLimiter(g.rate, realClock{}) }

func (g *globalConfig) endpointList() []string {
	var out []string
	for ep := range strings.SplitSeq(g.endpoints, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			out = append(out, ep)
		}
	}
	return out
}

func (g *globalConfig) sampleLimit() int {
	if g.precise {
		return stats.Unlimited
	}
	return defaultSampleLimit
}

// execute parses args, runs the chosen command and writes its report.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	g := defaultGlobalConfig()
	fs := flag.NewFlagSet("benchmark", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g.register(fs)
	fs.Usage = func() { printUsage(fs) }
	if err := fs.Parse(args); err != nil {
		return usageError(err)
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return fmt.Errorf("%w: no command given", errUsage)
	}
	cmd, ok := commands[fs.Arg(0)]
	if !ok {
		return fmt.Errorf("%w: unknown command %q (want %s)", errUsage, fs.Arg(0), strings.Join(commandNames(), ", "))
	}
	w, err := cmd(g, fs.Args()[1:], stderr)
	if err != nil {
		return usageError(err)
	}
	if err := g.validate(); err != nil {
		return err
	}
	return runBenchmark(ctx, g, w, stdout, stderr)
}

// usageError tags flag-parsing failures so they exit with status 2, but
// leaves a --help request recognisable.
func usageError(err error) error {
	if errors.Is(err, flag.ErrHelp) || errors.Is(err, errUsage) {
		return err
	}
	return fmt.Errorf("%w: %w", errUsage, err)
}

func printUsage(fs *flag.FlagSet) {
	out := fs.Output()
	fmt.Fprintf(out, "usage: benchmark [global flags] <%s> [command flags]\n", strings.Join(commandNames(), "|"))
	fmt.Fprintln(out, "\nglobal flags:")
	fs.PrintDefaults()
	fmt.Fprintln(out, "\nrun 'benchmark <command> --help' for command flags")
}
