package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnkv/cairn/tools/benchmark/stats"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// rpc performs one request. Everything inside it is timed, so it must do
// nothing but the gRPC call.
type rpc func(ctx context.Context, kv pb.KVClient) error

// requestSource builds the request with sequence number seq (0..total-1)
// outside the timed section. Each client has its own source, so a source may
// keep unsynchronised state such as a random generator.
type requestSource func(seq int64) rpc

// workload is a parsed command: how many requests to send and how each
// client makes them.
type workload struct {
	name  string
	total int64
	// newSource returns the request source of client number client.
	newSource func(client int) requestSource
	// run, when set, replaces the pool of unary requests: commands whose
	// traffic lives on long-lived streams (watch, lease keepalive) drive the
	// ready connections themselves and write their own report.
	run func(ctx context.Context, g *globalConfig, conns []*grpc.ClientConn, stdout, stderr io.Writer) error
	// ownClients marks a command that connects through this repository's
	// client library itself (stm): no raw connections are dialled for it.
	ownClients bool
}

// runBenchmark connects, drives the workload to completion (or until ctx is
// cancelled) and reports.
func runBenchmark(ctx context.Context, g *globalConfig, w *workload, stdout, stderr io.Writer) error {
	endpoints, err := resolveEndpoints(ctx, g)
	if err != nil {
		return err
	}
	g.resolved = endpoints
	if g.pids, err = g.serverPIDs(); err != nil {
		return err
	}
	if w.ownClients {
		return w.run(ctx, g, nil, stdout, stderr)
	}
	conns, err := dialPool(ctx, endpoints, g.conns, g.dialTimeout)
	if err != nil {
		return err
	}
	defer closeAll(conns)
	if w.run != nil {
		return w.run(ctx, g, conns, stdout, stderr)
	}

	fmt.Fprintf(stderr, "benchmark: %s, %d requests, %d clients over %d connections to %v\n",
		w.name, w.total, g.clients, len(conns), endpoints)
	rec := stats.NewRecorder(g.sampleLimit())
	bar := startProgress(g, stderr, w.total, rec.Count)
	elapsed := drive(ctx, g.newLimiter(), kvClients(conns, g.clients), w, rec)
	bar.finish()
	noteInterrupt(ctx, stderr)
	return writeReport(g, rec.Report(w.total, elapsed, stats.ReportOptions{}), stdout)
}

// noteInterrupt says on stderr why a report may be short.
func noteInterrupt(ctx context.Context, stderr io.Writer) {
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "benchmark: interrupted; reporting what completed")
	}
}

// kvClients gives each of n clients a KV stub on a connection chosen
// round-robin, the way etcd's benchmark shares connections.
func kvClients(conns []*grpc.ClientConn, n int) []pb.KVClient {
	out := make([]pb.KVClient, n)
	for i := range out {
		out[i] = pb.NewKVClient(conns[i%len(conns)])
	}
	return out
}

// drive runs the unary workload w on one goroutine per KV client and
// returns the wall-clock time taken.
func drive(ctx context.Context, lim *limiter, kvs []pb.KVClient, w *workload, rec *stats.Recorder) time.Duration {
	sources := make([]requestSource, len(kvs))
	for i := range sources {
		sources[i] = w.newSource(i)
	}
	return runPool(ctx, len(kvs), w.total, lim, func(client int, seq int64) {
		call := sources[client](seq)
		start := time.Now()
		err := call(ctx, kvs[client])
		rec.Record(time.Since(start), err)
	})
}

// runPool runs clients goroutines until total sequence numbers have been
// claimed or ctx is cancelled, and returns the wall-clock time taken. Each
// client claims the next number from a shared counter, waits for its slot
// under --rate (untimed), then calls do. Every number is handed out once,
// and fast clients are never idle waiting on slow ones. A number claimed
// but not run because ctx ended counts as not sent.
func runPool(ctx context.Context, clients int, total int64, lim *limiter, do func(client int, seq int64)) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for client := range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				seq := next.Add(1) - 1
				if seq >= total || !lim.wait(ctx) {
					return
				}
				do(client, seq)
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// writeJSONFile writes v, indented, to the --report-json file if one was
// given.
func writeJSONFile(g *globalConfig, v any) error {
	if g.reportJSON == "" {
		return nil
	}
	f, err := os.Create(g.reportJSON)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeReport adds the servers' memory to rep, prints it and, if asked,
// writes the JSON file. A server that could not be measured any more is
// reported as an error after the report.
func writeReport(g *globalConfig, rep *stats.Report, stdout io.Writer) error {
	mem, memErr := serverMemory(g.pids)
	rep.ServerMemory = mem
	if err := rep.WriteText(stdout, g.precise); err != nil {
		return err
	}
	if err := writeJSONFile(g, rep); err != nil {
		return err
	}
	return memErr
}

// section is one titled report of a command that reports several.
type section struct {
	title string
	rep   *stats.Report
}

// writeSections prints each report under its title, then the servers'
// memory once.
func writeSections(w io.Writer, precise bool, sections []section, mem []stats.ServerMemory) error {
	for _, s := range sections {
		if _, err := fmt.Fprintf(w, "\n=== %s ===\n", s.title); err != nil {
			return err
		}
		if err := s.rep.WriteText(w, precise); err != nil {
			return err
		}
	}
	return stats.WriteServerMemory(w, mem)
}
