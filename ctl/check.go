package ctl

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnkv/cairn/client"
)

// checkOpts are the flags of check perf and check datascale.
type checkOpts struct {
	load, prefix            string
	autoCompact, autoDefrag bool
}

// loadModel is one workload of the checks: s, m, l or xl.
type loadModel struct {
	limit    int // perf: writes per second; datascale: keys written
	clients  int
	duration time.Duration // perf only
}

var perfModels = map[string]loadModel{
	"s":  {limit: 150, clients: 50, duration: 60 * time.Second},
	"m":  {limit: 1000, clients: 200, duration: 60 * time.Second},
	"l":  {limit: 8000, clients: 500, duration: 60 * time.Second},
	"xl": {limit: 15000, clients: 1000, duration: 60 * time.Second},
}

var datascaleModels = map[string]loadModel{
	"s":  {limit: 10000, clients: 50},
	"m":  {limit: 100000, clients: 200},
	"l":  {limit: 1000000, clients: 500},
	"xl": {limit: 3000000, clients: 1000},
}

var loadAliases = map[string]string{
	"s": "s", "small": "s", "m": "m", "medium": "m",
	"l": "l", "large": "l", "xl": "xl", "xLarge": "xl",
}

func init() {
	register(
		&command{path: "check perf", usage: "Check the performance of the etcd cluster", flags: func(fs *flag.FlagSet, o *opts) {
			fs.StringVar(&o.check.load, "load", "s", "The performance check's workload model. Accepted workloads: s(small), m(medium), l(large), xl(xLarge). Different workload models use different configurations in terms of number of clients and expected throughput.")
			fs.StringVar(&o.check.prefix, "prefix", "/etcdctl-check-perf/", "The prefix for writing the performance check's keys.")
			checkCleanupFlags(fs, o)
		}, run: checkPerfCmd},
		&command{path: "check datascale", usage: "Check the memory usage of holding data for different workloads on a given server endpoint.", flags: func(fs *flag.FlagSet, o *opts) {
			fs.StringVar(&o.check.load, "load", "s", "The datascale check's workload model. Accepted workloads: s(small), m(medium), l(large), xl(xLarge)")
			fs.StringVar(&o.check.prefix, "prefix", "/etcdctl-check-datascale/", "The prefix for writing the datascale check's keys.")
			checkCleanupFlags(fs, o)
		}, run: checkDatascaleCmd},
	)
}

func checkCleanupFlags(fs *flag.FlagSet, o *opts) {
	fs.BoolVar(&o.check.autoCompact, "auto-compact", false, "Compact storage with last revision after test is finished.")
	fs.BoolVar(&o.check.autoDefrag, "auto-defrag", false, "Defragment storage after test is finished.")
}

func checkModel(models map[string]loadModel, load string) (loadModel, error) {
	name, ok := loadAliases[load]
	if !ok {
		return loadModel{}, fail(exitBadFeature, "unknown load option %v", load)
	}
	return models[name], nil
}

// loadClients picks the workload model --load names among models and
// connects as many clients as it takes.
func (c *cmdCtx) loadClients(models map[string]loadModel) (loadModel, []*client.Client, func(), error) {
	model, err := checkModel(models, c.o.check.load)
	if err != nil {
		return loadModel{}, nil, nil, err
	}
	cls, closeAll, err := c.clients(model.clients)
	return model, cls, closeAll, err
}

// clients connects n clients, one connection each, as the checks load
// the cluster from many connections.
func (c *cmdCtx) clients(n int) ([]*client.Client, func(), error) {
	cls := make([]*client.Client, 0, n)
	closeAll := func() {
		for _, cl := range cls {
			_ = cl.Close()
		}
	}
	for range n {
		cl, err := c.newClient()
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		cls = append(cls, cl)
	}
	return cls, closeAll, nil
}

// ensureEmpty refuses to run on a prefix that already holds keys. The
// message names etcdctl, as etcdctl's does, so that scripts matching it
// keep working.
func ensureEmpty(ctx context.Context, cl *client.Client, prefix, hint string) error {
	r, err := cl.Get(ctx, prefix, client.WithPrefix(), client.WithLimit(1))
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if len(r.Kvs) > 0 {
		return fail(exitInvalidInput, "prefix %q has keys. Delete with "+hint+" first", prefix, prefix)
	}
	return nil
}

// randomKey is a key of the checks: the prefix and a random varint in a
// buffer of size bytes.
func randomKey(prefix string, size int) string {
	k := make([]byte, size)
	binary.PutVarint(k, rand.Int64N(math.MaxInt64))
	return prefix + string(k)
}

// latencies collects the outcome of every request of a check.
type latencies struct {
	mu    sync.Mutex
	start time.Time
	lats  []float64 // seconds, successful requests only
	errs  map[string]int
}

func newLatencies() *latencies { return &latencies{start: time.Now(), errs: map[string]int{}} }

func (l *latencies) add(d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errs[err.Error()]++
		return
	}
	l.lats = append(l.lats, d.Seconds())
}

// loadStats are the figures the checks judge.
type loadStats struct {
	rps, slowest, stddev float64
	errs                 map[string]int
}

func (l *latencies) stats() loadStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := loadStats{errs: l.errs}
	n := float64(len(l.lats))
	if n == 0 {
		return s
	}
	s.rps = n / time.Since(l.start).Seconds()
	var sum float64
	for _, v := range l.lats {
		sum += v
		s.slowest = max(s.slowest, v)
	}
	mean := sum / n
	for _, v := range l.lats {
		s.stddev += (v - mean) * (v - mean)
	}
	s.stddev = math.Sqrt(s.stddev / n)
	return s
}

// runLoad sends the requests from ops through the clients, one worker per
// client, until ops closes; done is called after each request.
func runLoad(cls []*client.Client, ops <-chan client.Op, l *latencies, done func()) {
	var wg sync.WaitGroup
	for _, cl := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for op := range ops {
				st := time.Now()
				_, err := cl.Do(context.Background(), op)
				l.add(time.Since(st), err)
				done()
			}
		}()
	}
	wg.Wait()
}

// printErrors prints the error distribution; it reports whether there
// was any error.
func printErrors(w io.Writer, errs map[string]int) bool {
	if len(errs) == 0 {
		return false
	}
	fmt.Fprintln(w, "FAIL: too many errors")
	keys := make([]string, 0, len(errs))
	for k := range errs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "FAIL: ERROR(%v) -> %d\n", k, errs[k])
	}
	return true
}

// compactAt compacts physically at rev, reporting it as etcdctl does.
func compactAt(c *cmdCtx, cl *client.Client, rev int64) error {
	fmt.Fprintf(c.stdout, "Compacting with revision %d\n", rev)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cl.Compact(ctx, rev, client.WithCompactPhysical()); err != nil {
		return fail(exitError, "%v", err)
	}
	fmt.Fprintf(c.stdout, "Compacted with revision %d\n", rev)
	return nil
}

// defragAll defragments every endpoint of cl, reporting it as etcdctl does.
func defragAll(c *cmdCtx, cl *client.Client) error {
	for _, ep := range cl.Endpoints() {
		fmt.Fprintf(c.stdout, "Defragmenting %q\n", ep)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := cl.Defragment(ctx, ep)
		cancel()
		if err != nil {
			return fail(exitError, "%v", err)
		}
		fmt.Fprintf(c.stdout, "Defragmented %q\n", ep)
	}
	return nil
}

// memoryBytes reads process_resident_memory_bytes from the endpoint's
// /metrics, printing why when it cannot (0 then).
func memoryBytes(w io.Writer, hc *http.Client, host string) float64 {
	const key = "process_resident_memory_bytes"
	if !strings.HasPrefix(host, "http://") && !strings.HasPrefix(host, "https://") {
		host = "http://" + host
	}
	url := host + "/metrics"
	resp, err := hc.Get(url)
	if err != nil {
		fmt.Fprintf(w, "fetch error: %v\n", err)
		return 0
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		fmt.Fprintf(w, "fetch error: reading %s: %v\n", url, err)
		return 0
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				fmt.Fprintf(w, "parse error: %v\n", err)
				return 0
			}
			return f
		}
	}
	fmt.Fprintf(w, "could not find: %v\n", key)
	return 0
}

// onInterrupt calls f once if the process is interrupted before stop.
func onInterrupt(f func()) (stop func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-sig:
			f()
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
		<-finished
	}
}

func checkPerfCmd(c *cmdCtx) error {
	model, cls, closeAll, err := c.loadClients(perfModels)
	if err != nil {
		return err
	}
	defer closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), model.duration)
	defer cancel()
	stop := onInterrupt(func() { cancel(); perfCleanup(c, cls[0], false) })
	defer stop()
	if err := ensureEmpty(ctx, cls[0], c.o.check.prefix, "'etcdctl del --prefix %s'"); err != nil {
		return err
	}
	bar := startProgress(c.stderr, int64(model.duration/time.Second))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	go func() { // the bar counts seconds
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				bar.add(1)
			}
		}
	}()
	ops := make(chan client.Op, model.clients)
	go perfRequests(ctx, ops, c.o.check.prefix, model.limit)
	l := newLatencies()
	runLoad(cls, ops, l, func() {})
	bar.finish()
	s := l.stats()
	if err := perfCleanup(c, cls[0], c.o.check.autoCompact); err != nil {
		return err
	}
	if c.o.check.autoDefrag {
		if err := defragAll(c, cls[0]); err != nil {
			return err
		}
	}
	return perfVerdict(c.stdout, s, model.limit)
}

// perfRequests sends rate puts per second to ops until ctx ends.
func perfRequests(ctx context.Context, ops chan<- client.Op, prefix string, rate int) {
	defer close(ops)
	val := string(make([]byte, 1024))
	t := time.NewTicker(time.Second / time.Duration(rate))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		select {
		case ops <- client.OpPut(randomKey(prefix, 256), val):
		case <-ctx.Done():
			return
		}
	}
}

// perfCleanup deletes the check's keys; a failure is reported, not fatal.
func perfCleanup(c *cmdCtx, cl *client.Client, compact bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := cl.Delete(ctx, c.o.check.prefix, client.WithPrefix())
	if err != nil {
		fmt.Fprintf(c.stdout, "FAIL: Cleanup failed during key deletion: ERROR(%v)\n", err)
		return nil
	}
	if compact {
		return compactAt(c, cl, r.Header.Revision)
	}
	return nil
}

// perfVerdict prints the PASS/FAIL lines of check perf.
func perfVerdict(w io.Writer, s loadStats, limit int) error {
	ok := !printErrors(w, s.errs)
	if s.rps/float64(limit) <= 0.9 {
		fmt.Fprintf(w, "FAIL: Throughput too low: %d writes/s\n", int(s.rps)+1)
		ok = false
	} else {
		fmt.Fprintf(w, "PASS: Throughput is %d writes/s\n", int(s.rps)+1)
	}
	if s.slowest > 0.5 {
		fmt.Fprintf(w, "Slowest request took too long: %fs\n", s.slowest)
		ok = false
	} else {
		fmt.Fprintf(w, "PASS: Slowest request took %fs\n", s.slowest)
	}
	if s.stddev > 0.1 {
		fmt.Fprintf(w, "Stddev too high: %fs\n", s.stddev)
		ok = false
	} else {
		fmt.Fprintf(w, "PASS: Stddev is %fs\n", s.stddev)
	}
	if !ok {
		fmt.Fprintln(w, "FAIL")
		return silent(exitError)
	}
	fmt.Fprintln(w, "PASS")
	return nil
}

func checkDatascaleCmd(c *cmdCtx) error {
	model, cls, closeAll, err := c.loadClients(datascaleModels)
	if err != nil {
		return err
	}
	defer closeAll()
	ep := strings.Split(c.g.endpoints, ",")[0]
	if err := ensureEmpty(context.Background(), cls[0], c.o.check.prefix, "etcdctl del --prefix %s"); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	before := memoryBytes(c.stdout, hc, ep)
	if before == 0 {
		fmt.Fprintln(c.stdout, "FAIL: Could not read process_resident_memory_bytes before the put operations.")
		return silent(exitError)
	}
	fmt.Fprintf(c.stdout, "Start data scale check for work load [%v key-value pairs, %v bytes per key-value, %v concurrent clients].\n", model.limit, 1024, model.clients)
	bar := startProgress(c.stderr, int64(model.limit))
	ops := make(chan client.Op, model.clients)
	go func() {
		defer close(ops)
		val := string(make([]byte, 512))
		for range model.limit {
			ops <- client.OpPut(randomKey(c.o.check.prefix, 512), val)
		}
	}()
	l := newLatencies()
	runLoad(cls, ops, l, func() { bar.add(1) })
	bar.finish()
	after := memoryBytes(c.stdout, hc, ep)
	if after == 0 {
		fmt.Fprintln(c.stdout, "FAIL: Could not read process_resident_memory_bytes after the put operations.")
		return silent(exitError)
	}
	return datascaleVerdict(c, cls[0], l.stats(), after-before)
}

// datascaleVerdict deletes the check's keys, compacts and defragments if
// asked, and prints the memory the keys took.
func datascaleVerdict(c *cmdCtx, cl *client.Client, s loadStats, used float64) error {
	r, err := cl.Delete(context.Background(), c.o.check.prefix, client.WithPrefix())
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if c.o.check.autoCompact {
		if err := compactAt(c, cl, r.Header.Revision); err != nil {
			return err
		}
	}
	if c.o.check.autoDefrag {
		if err := defragAll(c, cl); err != nil {
			return err
		}
	}
	if printErrors(c.stdout, s.errs) {
		return silent(exitError)
	}
	fmt.Fprintf(c.stdout, "PASS: Approximate system memory used : %v MB.\n", strconv.FormatFloat(used/(1024*1024), 'f', 2, 64))
	return nil
}
