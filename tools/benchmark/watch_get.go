package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnkv/cairn/tools/benchmark/stats"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// watchGetConfig is a parsed watch-get command: it measures the latency of
// gets while many watchers catch up on history. Before the clock starts
// it writes events revisions of one key; then it creates watchers on that
// key from the first of those revisions, so every watcher starts behind
// ("unsynced") and the server must replay history to each, while
// --clients getters send getTotal gets of the same key.
type watchGetConfig struct {
	watchers     int
	streams      int
	events       int
	getTotal     int64
	serializable bool
	waitTimeout  time.Duration
}

// watchGetKey is the key written, watched and read.
var watchGetKey = []byte("benchmark/watch-get")

func parseWatchGet(g *globalConfig, args []string, stderr io.Writer) (*workload, error) {
	c := &watchGetConfig{}
	var consistency string
	fs := flag.NewFlagSet("watch-get", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g.register(fs)
	fs.IntVar(&c.watchers, "watchers", 1000, "number of watchers, each replaying --events past revisions")
	fs.IntVar(&c.streams, "streams", 1, "gRPC watch streams the watchers share round-robin; stream i uses connection i mod --conns")
	fs.IntVar(&c.events, "events", 8, "revisions written before the run, which every watcher must receive")
	fs.Int64Var(&c.getTotal, "get-total", defaultTotal, "number of gets sent while the watchers catch up")
	fs.StringVar(&consistency, "consistency", "s", "l for linearizable, s for serializable gets")
	fs.DurationVar(&c.waitTimeout, "wait-timeout", 60*time.Second, "how long to wait after the last get for every watcher to catch up")
	if err := parseNoPositional(fs, args); err != nil {
		return nil, err
	}
	serializable, err := parseConsistency(consistency)
	c.serializable = serializable
	if err := validateAll(err, c.validate()); err != nil {
		return nil, err
	}
	return &workload{name: "watch-get", total: c.getTotal, run: c.run}, nil
}

func (c *watchGetConfig) validate() error {
	switch {
	case c.watchers < 1:
		return fmt.Errorf("%w: --watchers must be at least 1", errUsage)
	case c.streams < 1:
		return fmt.Errorf("%w: --streams must be at least 1", errUsage)
	case c.events < 1:
		return fmt.Errorf("%w: --events must be at least 1", errUsage)
	case c.getTotal < 1:
		return fmt.Errorf("%w: --get-total must be at least 1", errUsage)
	case c.waitTimeout <= 0:
		return fmt.Errorf("%w: --wait-timeout must be positive", errUsage)
	}
	return nil
}

// catchUpReport says whether every watcher received the replayed history.
type catchUpReport struct {
	Watchers         int                `json:"watchers"`
	Streams          int                `json:"streams"`
	EventsPerWatcher int                `json:"events_per_watcher"`
	ExpectedEvents   int64              `json:"expected_events"`
	ReceivedEvents   int64              `json:"received_events"`
	CaughtUp         int64              `json:"caught_up_watchers"`
	CatchUpSeconds   float64            `json:"catch_up_seconds"` // from the start until the last watcher caught up
	StreamErrors     []stats.ErrorCount `json:"stream_errors"`
}

type watchGetResult struct {
	Gets         *stats.Report        `json:"gets"`
	Watch        catchUpReport        `json:"watch"`
	ServerMemory []stats.ServerMemory `json:"server_memory,omitempty"`
}

// catchUp is the shared state of the watch streams of one run.
type catchUp struct {
	events   int
	start    time.Time
	received atomic.Int64
	caughtUp atomic.Int64
	lastDone atomic.Int64 // nanoseconds since start when the latest watcher caught up

	mu   sync.Mutex
	errs map[string]int64
}

func (c *watchGetConfig) run(ctx context.Context, g *globalConfig, conns []*grpc.ClientConn, stdout, stderr io.Writer) error {
	fmt.Fprintf(stderr, "benchmark: watch-get, %d watchers on %d streams replaying %d events, %d gets by %d clients over %d connections\n",
		c.watchers, c.streams, c.events, c.getTotal, g.clients, len(conns))
	firstRev, err := writeHistory(ctx, pb.NewKVClient(conns[0]), c.events)
	if err != nil {
		return fmt.Errorf("writing the watched history: %w", err)
	}
	cu := &catchUp{events: c.events, start: time.Now(), errs: map[string]int64{}}
	streamCtx, stopStreams := context.WithCancel(ctx)
	defer stopStreams()
	var streams sync.WaitGroup
	for i := range c.streams {
		n := c.watchers/c.streams + btoi(i < c.watchers%c.streams)
		streams.Go(func() { cu.runStream(streamCtx, conns[i%len(conns)], n, firstRev) })
	}

	gets := stats.NewRecorder(g.sampleLimit())
	kvs := kvClients(conns, g.clients)
	req := &pb.RangeRequest{Key: watchGetKey, Serializable: c.serializable}
	bar := startProgress(g, stderr, c.getTotal, gets.Count)
	elapsed := runPool(ctx, len(kvs), c.getTotal, g.newLimiter(), func(client int, _ int64) {
		start := time.Now()
		_, err := kvs[client].Range(ctx, req)
		gets.Record(time.Since(start), err)
	})
	bar.finish()
	waitErr := cu.await(ctx, int64(c.watchers), c.waitTimeout)
	stopStreams()
	streams.Wait()
	noteInterrupt(ctx, stderr)

	res := &watchGetResult{Gets: gets.Report(c.getTotal, elapsed, stats.ReportOptions{Unit: "Gets"}), Watch: cu.report(c)}
	var memErr error
	res.ServerMemory, memErr = serverMemory(g.pids)
	if err := writeSections(stdout, g.precise, []section{{"Gets while watchers catch up (latency: send to response)", res.Gets}}, nil); err != nil {
		return err
	}
	if err := res.Watch.writeText(stdout); err != nil {
		return err
	}
	if err := stats.WriteServerMemory(stdout, res.ServerMemory); err != nil {
		return err
	}
	if err := writeJSONFile(g, res); err != nil {
		return err
	}
	return errors.Join(waitErr, memErr)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeHistory puts n revisions of the watched key and returns the first.
func writeHistory(ctx context.Context, kv pb.KVClient, n int) (int64, error) {
	var first int64
	for i := range n {
		resp, err := kv.Put(ctx, &pb.PutRequest{Key: watchGetKey, Value: fmt.Appendf(nil, "%d", i)})
		if err != nil {
			return 0, err
		}
		if i == 0 {
			first = resp.GetHeader().GetRevision()
		}
	}
	return first, nil
}

// runStream opens one watch stream with n watchers that all start at rev.
// Creates are sent from their own goroutine while this one receives, so a
// server that answers creates and replays history as they come never waits
// on a client that is still sending.
func (cu *catchUp) runStream(ctx context.Context, cc *grpc.ClientConn, n int, rev int64) {
	if n == 0 {
		return
	}
	stream, err := pb.NewWatchClient(cc).Watch(ctx)
	if err != nil {
		cu.streamError(ctx, err)
		return
	}
	sent := make(chan error, 1)
	go func() {
		create := &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{
			CreateRequest: &pb.WatchCreateRequest{Key: watchGetKey, StartRevision: rev},
		}}
		for range n {
			if err := stream.Send(create); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	cu.receive(ctx, stream, n)
	if err := <-sent; err != nil {
		cu.streamError(ctx, err)
	}
}

// receive counts each watcher's events until all n have caught up.
func (cu *catchUp) receive(ctx context.Context, stream pb.Watch_WatchClient, n int) {
	got := make(map[int64]int, n)
	done := 0
	for done < n {
		resp, err := stream.Recv()
		if err != nil {
			cu.streamError(ctx, err)
			return
		}
		if resp.GetCanceled() {
			cu.streamError(ctx, fmt.Errorf("watch canceled by server: %q", resp.GetCancelReason()))
			continue
		}
		id, before := resp.GetWatchId(), got[resp.GetWatchId()]
		got[id] = before + len(resp.GetEvents())
		cu.received.Add(int64(len(resp.GetEvents())))
		if before < cu.events && got[id] >= cu.events {
			done++
			cu.caughtUp.Add(1)
			cu.lastDone.Store(int64(time.Since(cu.start)))
		}
	}
}

func (cu *catchUp) streamError(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return // the run is over; the stream was closed on purpose
	}
	cu.mu.Lock()
	defer cu.mu.Unlock()
	cu.errs[err.Error()]++
}

// await waits until every watcher caught up, timeout passes or ctx ends;
// only a timeout is an error.
func (cu *catchUp) await(ctx context.Context, watchers int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for cu.caughtUp.Load() < watchers {
		if time.Now().After(deadline) {
			return fmt.Errorf("watch-get: %d of %d watchers caught up after waiting %v", cu.caughtUp.Load(), watchers, timeout)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

func (cu *catchUp) report(c *watchGetConfig) catchUpReport {
	r := catchUpReport{
		Watchers:         c.watchers,
		Streams:          c.streams,
		EventsPerWatcher: c.events,
		ExpectedEvents:   int64(c.watchers) * int64(c.events),
		ReceivedEvents:   cu.received.Load(),
		CaughtUp:         cu.caughtUp.Load(),
		CatchUpSeconds:   time.Duration(cu.lastDone.Load()).Seconds(),
	}
	cu.mu.Lock()
	defer cu.mu.Unlock()
	for _, msg := range slices.Sorted(maps.Keys(cu.errs)) {
		r.StreamErrors = append(r.StreamErrors, stats.ErrorCount{Message: msg, Count: cu.errs[msg]})
	}
	return r
}

func (r *catchUpReport) writeText(w io.Writer) error {
	p := &errWriter{w: w}
	p.printf("\n=== Watchers catching up ===\n")
	p.printf("  Watchers caught up:\t%d of %d on %d streams\n", r.CaughtUp, r.Watchers, r.Streams)
	p.printf("  Events:\t%d expected (%d watchers x %d revisions), %d received\n",
		r.ExpectedEvents, r.Watchers, r.EventsPerWatcher, r.ReceivedEvents)
	p.printf("  Catch-up time:\t%.6f secs. (until the last watcher had every event)\n", r.CatchUpSeconds)
	for _, e := range r.StreamErrors {
		p.printf("  Stream error [%d]\t%s\n", e.Count, e.Message)
	}
	return p.err
}
