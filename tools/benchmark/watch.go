package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnkv/cairn/pkg/wait"
	"github.com/cairnkv/cairn/tools/benchmark/stats"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc"
)

// watchConfig is a parsed watch-latency or watch command.
//
// The run opens every watch stream and creates every watcher before the
// first put, then sends putTotal puts (at putRate per second, or as fast as
// the --clients putters can go) to keys the watchers cover. Each put's value
// starts with its sequence number, big-endian, so a watcher can tell which
// put an event belongs to: the put-to-event latency is the time from just
// before that put was sent until the watcher's stream returned the event.
type watchConfig struct {
	name         string
	watchers     int // ordinary watchers, spread over streams
	streams      int
	slowWatchers int // each on a stream of its own that pauses slowDelay per response
	slowDelay    time.Duration
	putTotal     int64
	putRate      float64 // puts per second; 0 means no pacing
	keys         keySpec
	valSize      int
	waitTimeout  time.Duration
}

// seqBytes is how much of each put's value carries its sequence number.
const seqBytes = 8

func parseWatchLatency(g *globalConfig, args []string, stderr io.Writer) (*workload, error) {
	return parseWatchCommand("watch-latency", false, g, args, stderr)
}

func parseWatch(g *globalConfig, args []string, stderr io.Writer) (*workload, error) {
	return parseWatchCommand("watch", true, g, args, stderr)
}

func parseWatchCommand(name string, slowFlags bool, g *globalConfig, args []string, stderr io.Writer) (*workload, error) {
	c := &watchConfig{name: name}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	g.register(fs)
	fs.IntVar(&c.watchers, "watchers", 100, "number of watchers on the watched key (or key range)")
	fs.IntVar(&c.streams, "streams", 10, "gRPC watch streams the watchers share round-robin; stream i uses connection i mod --conns")
	fs.Int64Var(&c.putTotal, "put-total", 1000, "number of puts to the watched keys")
	fs.Float64Var(&c.putRate, "put-rate", 0, "puts per second over all putters (0 = as fast as the --clients putters go)")
	fs.IntVar(&c.keys.size, "key-size", 8, "key size in bytes")
	fs.Int64Var(&c.keys.space, "key-space-size", 1, "distinct keys put to; above 1 the watchers watch the range covering them")
	fs.IntVar(&c.valSize, "val-size", 256, "value size in bytes (at least 8: the value starts with the put's sequence number)")
	fs.DurationVar(&c.waitTimeout, "wait-timeout", 60*time.Second, "how long to wait after the last put for every watcher to receive every event")
	if slowFlags {
		fs.IntVar(&c.slowWatchers, "slow-watchers", 0, "extra watchers that each read on their own stream and pause --slow-delay after every response")
		fs.DurationVar(&c.slowDelay, "slow-delay", 10*time.Millisecond, "pause of a slow watcher after each response it reads")
	}
	c.keys.sequential = true
	if err := parseNoPositional(fs, args); err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &workload{name: name, run: c.run}, nil
}

func (c *watchConfig) validate() error {
	switch {
	case c.watchers < 0 || c.slowWatchers < 0 || c.watchers+c.slowWatchers < 1:
		return fmt.Errorf("%w: need at least one watcher", errUsage)
	case c.watchers > 0 && c.streams < 1:
		return fmt.Errorf("%w: --streams must be at least 1", errUsage)
	case c.putTotal < 1:
		return fmt.Errorf("%w: --put-total must be at least 1", errUsage)
	case c.putRate < 0:
		return fmt.Errorf("%w: --put-rate must not be negative", errUsage)
	case c.valSize < seqBytes:
		return fmt.Errorf("%w: --val-size must be at least %d", errUsage, seqBytes)
	case c.waitTimeout <= 0:
		return fmt.Errorf("%w: --wait-timeout must be positive", errUsage)
	case c.slowDelay < 0:
		return fmt.Errorf("%w: --slow-delay must not be negative", errUsage)
	}
	return c.keys.validate()
}

// watchRange returns the key and range end that cover every key the puts
// write.
func (c *watchConfig) watchRange() (key, end []byte) { return c.keys.covering() }

// putValue is the value of put seq: the sequence number, then filler.
func putValue(filler []byte, seq int64) []byte {
	v := make([]byte, len(filler))
	copy(v, filler)
	binary.BigEndian.PutUint64(v, uint64(seq))
	return v
}

// streamPlan is one watch stream: its connection and the watchers on it.
type streamPlan struct {
	conn     int
	watchers []int // indexes into watchRun.watchers
	slow     bool
}

// planStreams spreads the ordinary watchers round-robin over c.streams
// streams and gives every slow watcher a stream of its own, because a
// stream is read in order and one slow reader would hold up every watcher
// sharing it. Stream i uses connection i mod conns. Streams left with no
// watcher (more streams than watchers) are dropped.
func (c *watchConfig) planStreams(conns int) []streamPlan {
	var plans []streamPlan
	if c.watchers > 0 {
		plans = make([]streamPlan, min(c.streams, c.watchers))
		for w := range c.watchers {
			plans[w%len(plans)].watchers = append(plans[w%len(plans)].watchers, w)
		}
	}
	for k := range c.slowWatchers {
		plans = append(plans, streamPlan{watchers: []int{c.watchers + k}, slow: true})
	}
	for i := range plans {
		plans[i].conn = i % conns
	}
	return plans
}

// watcherState is what one watcher received. It is written only by its
// stream's receiver goroutine and read after that goroutine has finished.
type watcherState struct {
	slow       bool
	seen       []uint64 // bitset over put sequence numbers
	distinct   int64
	lastRev    int64
	outOfOrder int64 // events whose mod revision was not above the previous event's
	duplicates int64
	unexpected int64 // events that are not from this run's puts
	canceled   string
}

// watchRun is the shared state of one run.
type watchRun struct {
	cfg  *watchConfig
	base time.Time
	// sendAt[seq] is when put seq was sent, in nanoseconds since base (0 =
	// not sent yet). It is written before the put leaves and read by the
	// receivers, hence atomic.
	sendAt []atomic.Int64
	putOK  []atomic.Bool

	watchers []*watcherState
	// delivered counts distinct, valid events over all watchers, so the main
	// goroutine can tell when delivery is complete without touching the
	// receivers' state.
	delivered atomic.Int64
	// liveStreams counts receivers still reading, so waiting for delivery
	// stops early if every stream has failed.
	liveStreams atomic.Int64

	fastRec, slowRec *stats.Recorder

	mu           sync.Mutex
	streamErrs   map[string]int64
	lastFastRecv time.Duration // latest event receipt on a fast stream, since base
	lastSlowRecv time.Duration
}

func newWatchRun(c *watchConfig, sampleLimit int) *watchRun {
	r := &watchRun{
		cfg:        c,
		base:       time.Now(),
		sendAt:     make([]atomic.Int64, c.putTotal),
		putOK:      make([]atomic.Bool, c.putTotal),
		watchers:   make([]*watcherState, c.watchers+c.slowWatchers),
		fastRec:    stats.NewRecorder(sampleLimit),
		slowRec:    stats.NewRecorder(sampleLimit),
		streamErrs: map[string]int64{},
	}
	for i := range r.watchers {
		r.watchers[i] = &watcherState{slow: i >= c.watchers, seen: make([]uint64, (c.putTotal+63)/64)}
	}
	return r
}

func (r *watchRun) since() time.Duration { return max(time.Since(r.base), 1) }

func (r *watchRun) streamError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.streamErrs[err.Error()]++
}

func (c *watchConfig) run(ctx context.Context, g *globalConfig, conns []*grpc.ClientConn, stdout, stderr io.Writer) error {
	plans := c.planStreams(len(conns))
	fmt.Fprintf(stderr, "benchmark: %s, %d watchers on %d streams, %d slow watchers, %d puts by %d clients over %d connections\n",
		c.name, c.watchers, len(plans)-c.slowWatchers, c.slowWatchers, c.putTotal, g.clients, len(conns))
	if c.putRate == 0 {
		c.putRate = g.rate // --rate caps the puts unless --put-rate says otherwise
	}
	r := newWatchRun(c, g.sampleLimit())
	rssBefore, err := currentRSS(procRoot, g.pids)
	if err != nil {
		return fmt.Errorf("--rss-pid: %w", err)
	}

	streamCtx, stopStreams := context.WithCancel(ctx)
	defer stopStreams()
	var receivers sync.WaitGroup
	setupErrs := make(chan error, len(plans))
	for _, plan := range plans {
		receivers.Go(func() { r.runStream(streamCtx, conns[plan.conn], plan, setupErrs) })
	}
	for range plans {
		if err := <-setupErrs; err != nil {
			stopStreams()
			receivers.Wait()
			return fmt.Errorf("setting up watchers: %w", err)
		}
	}

	rssAfter, err := currentRSS(procRoot, g.pids)
	if err != nil {
		return fmt.Errorf("--rss-pid: %w", err)
	}

	putRec := stats.NewRecorder(g.sampleLimit())
	bar := startProgress(g, stderr, c.putTotal, putRec.Count)
	putStart := time.Now()
	putElapsed := r.sendPuts(ctx, kvClients(conns, g.clients), putRec)
	bar.finish()
	succeeded := int64(0)
	for i := range r.putOK {
		if r.putOK[i].Load() {
			succeeded++
		}
	}
	waitErr := r.awaitDelivery(ctx, succeeded)
	stopStreams()
	receivers.Wait()
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "benchmark: interrupted; reporting what completed")
	}

	res := r.result(succeeded, putStart.Sub(r.base), putRec, putElapsed)
	mem, memErr := serverMemory(g.pids)
	res.ServerMemory = mem
	res.WatcherMemory = newWatcherMemory(g.pids, c.watchers+c.slowWatchers, rssBefore, rssAfter)
	if err := res.writeText(stdout, g.precise); err != nil {
		return err
	}
	if err := writeJSONFile(g, res); err != nil {
		return err
	}
	if waitErr != nil {
		return errors.Join(waitErr, memErr)
	}
	return errors.Join(res.check(), memErr)
}

// runStream opens one watch stream, creates its watchers one at a time
// (each create waits for its confirmation, so watch IDs map to watchers
// without relying on any server-side ordering), reports the outcome on
// setup, and then receives until ctx ends.
func (r *watchRun) runStream(ctx context.Context, cc *grpc.ClientConn, plan streamPlan, setup chan<- error) {
	stream, err := pb.NewWatchClient(cc).Watch(ctx, grpc.ForceCodecV2(newWatchCodec()))
	if err != nil {
		setup <- err
		return
	}
	key, end := r.cfg.watchRange()
	byID := make(map[int64]*watcherState, len(plan.watchers))
	for _, w := range plan.watchers {
		req := &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{
			CreateRequest: &pb.WatchCreateRequest{Key: key, RangeEnd: end},
		}}
		if err := stream.Send(req); err != nil {
			setup <- err
			return
		}
		resp, err := stream.Recv()
		if err != nil {
			setup <- err
			return
		}
		if !resp.GetCreated() || resp.GetCanceled() {
			setup <- fmt.Errorf("watch create refused: %s", resp.GetCancelReason())
			return
		}
		if len(resp.GetEvents()) > 0 {
			setup <- errors.New("watch create response carried events before any put")
			return
		}
		byID[resp.GetWatchId()] = r.watchers[w]
	}
	r.liveStreams.Add(1)
	defer r.liveStreams.Add(-1)
	setup <- nil
	r.receive(ctx, stream, byID, plan.slow)
}

// latencyBatch is how many latencies a receiver collects before handing
// them to the shared Recorder in one locked call.
const latencyBatch = 1024

func (r *watchRun) receive(ctx context.Context, stream pb.Watch_WatchClient, byID map[int64]*watcherState, slow bool) {
	rec := r.fastRec
	if slow {
		rec = r.slowRec
	}
	batch := make([]time.Duration, 0, latencyBatch)
	var last time.Duration
	defer func() {
		rec.RecordSuccesses(batch)
		r.mu.Lock()
		if slow {
			r.lastSlowRecv = max(r.lastSlowRecv, last)
		} else {
			r.lastFastRecv = max(r.lastFastRecv, last)
		}
		r.mu.Unlock()
	}()
	var resp watchEventsResponse // watchCodec decodes into it
	for {
		err := stream.RecvMsg(&resp)
		now := r.since() // the clock stops here for every event in resp
		if err != nil {
			if ctx.Err() == nil {
				r.streamError(err)
			}
			return
		}
		w := byID[resp.watchID]
		if w == nil {
			continue // a response for no watcher of ours; nothing to count
		}
		if resp.canceled {
			w.canceled = fmt.Sprintf("canceled by server: %q (compact revision %d)", resp.cancelReason, resp.compactRevision)
			continue
		}
		for _, ev := range resp.events {
			lat, ok := r.account(w, ev, now)
			if !ok {
				continue
			}
			last = now
			batch = append(batch, lat)
			if len(batch) == latencyBatch {
				rec.RecordSuccesses(batch)
				batch = batch[:0]
			}
		}
		if slow && r.cfg.slowDelay > 0 && len(resp.events) > 0 {
			select {
			case <-time.After(r.cfg.slowDelay):
			case <-ctx.Done():
			}
		}
	}
}

// account checks one event received by w at now (since base) and returns
// its put-to-event latency, or false if it is not a new event of this run.
func (r *watchRun) account(w *watcherState, ev watchEvent, now time.Duration) (time.Duration, bool) {
	if rev := ev.modRevision; rev <= w.lastRev {
		w.outOfOrder++
	} else {
		w.lastRev = rev
	}
	if ev.typ != mvccpb.PUT || !ev.hasSeq {
		w.unexpected++
		return 0, false
	}
	seq := ev.seq
	if seq < 0 || seq >= r.cfg.putTotal {
		w.unexpected++
		return 0, false
	}
	sent := r.sendAt[seq].Load()
	if sent == 0 {
		w.unexpected++ // an event for a put not yet sent cannot be ours
		return 0, false
	}
	word, bit := seq/64, uint64(1)<<(seq%64)
	if w.seen[word]&bit != 0 {
		w.duplicates++
		return 0, false
	}
	w.seen[word] |= bit
	w.distinct++
	r.delivered.Add(1)
	return now - time.Duration(sent), true
}

// sendPuts sends every put once, from len(kvs) concurrent putters. With a
// rate, put seq is due at seq/rate seconds after the start and is not sent
// before then; a put that is late (the putters are saturated) goes at once.
// The clock of each put starts when it is actually sent.
func (r *watchRun) sendPuts(ctx context.Context, kvs []pb.KVClient, rec *stats.Recorder) time.Duration {
	filler := fixedValue(r.cfg.valSize)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, kv := range kvs {
		wg.Go(func() {
			for ctx.Err() == nil {
				seq := next.Add(1) - 1
				if seq >= r.cfg.putTotal {
					return
				}
				req := &pb.PutRequest{Key: r.cfg.keys.encode(seq % r.cfg.keys.space), Value: putValue(filler, seq)}
				if !wait.Until(ctx, start.Add(r.cfg.dueAfter(seq))) {
					return
				}
				t0 := time.Now()
				r.sendAt[seq].Store(max(int64(t0.Sub(r.base)), 1))
				_, err := kv.Put(ctx, req)
				rec.Record(time.Since(t0), err)
				if err == nil {
					r.putOK[seq].Store(true)
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// dueAfter is when put seq is due, relative to the start of the puts.
func (c *watchConfig) dueAfter(seq int64) time.Duration {
	if c.putRate == 0 {
		return 0
	}
	return time.Duration(float64(seq) / c.putRate * float64(time.Second))
}

// awaitDelivery waits until every watcher has received an event for each
// of the succeeded puts, or --wait-timeout passes, or ctx ends. Only a
// timeout is an error; what is missing shows in the delivery check.
func (r *watchRun) awaitDelivery(ctx context.Context, succeeded int64) error {
	want := succeeded * int64(len(r.watchers))
	deadline := time.Now().Add(r.cfg.waitTimeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for r.delivered.Load() < want {
		if r.liveStreams.Load() == 0 {
			return fmt.Errorf("%s: every watch stream ended with %d of %d events delivered", r.cfg.name, r.delivered.Load(), want)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d of %d events delivered after waiting %v", r.cfg.name, r.delivered.Load(), want, r.cfg.waitTimeout)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}
