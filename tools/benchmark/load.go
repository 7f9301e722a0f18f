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
}

// runBenchmark connects, drives the workload to completion (or until ctx is
// cancelled) and reports.
func runBenchmark(ctx context.Context, g *globalConfig, w *workload, stdout, stderr io.Writer) error {
	endpoints := g.endpointList()
	if g.targetLeader {
		leader, err := findLeader(ctx, endpoints, g.dialTimeout)
		if err != nil {
			return err
		}
		endpoints = []string{leader}
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
	elapsed := drive(ctx, kvClients(conns, g.clients), w, rec)
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "benchmark: interrupted; reporting what completed")
	}
	return writeReport(g, rec.Report(w.total, elapsed, stats.ReportOptions{}), stdout)
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

// drive runs one goroutine per client until all w.total requests have been
// claimed or ctx is cancelled, and returns the wall-clock time taken.
// Requests are claimed from a shared counter, so every sequence number is
// sent exactly once and fast clients are never idle waiting on slow ones.
func drive(ctx context.Context, kvs []pb.KVClient, w *workload, rec *stats.Recorder) time.Duration {
	sources := make([]requestSource, len(kvs))
	for i := range sources {
		sources[i] = w.newSource(i)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i, kv := range kvs {
		wg.Go(func() { runClient(ctx, kv, sources[i], &next, w.total, rec) })
	}
	wg.Wait()
	return time.Since(start)
}

func runClient(ctx context.Context, kv pb.KVClient, source requestSource, next *atomic.Int64, total int64, rec *stats.Recorder) {
	for ctx.Err() == nil {
		seq := next.Add(1) - 1
		if seq >= total {
			return
		}
		call := source(seq)
		start := time.Now()
		err := call(ctx, kv)
		rec.Record(time.Since(start), err)
	}
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

// writeReport prints the text report and, if asked, writes the JSON file.
func writeReport(g *globalConfig, rep *stats.Report, stdout io.Writer) error {
	if err := rep.WriteText(stdout, g.precise); err != nil {
		return err
	}
	if g.reportJSON == "" {
		return nil
	}
	f, err := os.Create(g.reportJSON)
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
