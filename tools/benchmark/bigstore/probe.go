package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/tools/benchmark/stats"
)

// The probe measures what a maintenance call does to writers. It is open
// loop: put n is sent at start + n*interval, each in its own goroutine,
// whether or not earlier puts have answered, so a server that stalls
// cannot slow the probe down and hide the stall (a closed-loop client
// would send fewer requests exactly when they are slow). The puts cycle
// over a fixed set of keys with 256-byte values.
//
// A put's latency runs from just before it is sent to its answer; it is
// counted in the window that its scheduled send time falls in.

// probeTimeout bounds one probe put; a put stuck behind a long defrag
// must still be measured, so it is generous.
const probeTimeout = 5 * time.Minute

// probeSample is one probe put.
type probeSample struct {
	at      time.Duration // scheduled send time, from the probe's start
	latency time.Duration
	err     error
	// late is how long after its scheduled time the put was sent: the
	// probe's own scheduling delay on a busy machine, not the server's.
	late time.Duration
}

// probe is a running open-loop probe.
type probe struct {
	kv       pb.KVClient
	interval time.Duration
	keys     int
	value    []byte
	start    time.Time

	stop     chan struct{}
	loopDone chan struct{}
	inflight sync.WaitGroup

	mu      sync.Mutex
	samples []probeSample
}

// startProbe starts sending puts at once.
func startProbe(ctx context.Context, kv pb.KVClient, interval time.Duration, keys int) *probe {
	p := &probe{
		kv: kv, interval: interval, keys: keys,
		value: randomValue(256),
		start: time.Now(),
		stop:  make(chan struct{}), loopDone: make(chan struct{}),
	}
	go p.loop(ctx)
	return p
}

func randomValue(n int) []byte {
	rng := rand.New(rand.NewPCG(15, 16))
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(rng.UintN(256))
	}
	return v
}

// probeKey is the key of put n.
func probeKey(n, keys int) []byte { return fmt.Appendf(nil, "bigstore/probe/%06d", n%keys) }

// since is the probe's clock: time since its start.
func (p *probe) since() time.Duration { return time.Since(p.start) }

func (p *probe) loop(ctx context.Context) {
	defer close(p.loopDone)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for n := 0; ; n++ {
		at := time.Duration(n) * p.interval
		timer.Reset(time.Until(p.start.Add(at)))
		select {
		case <-p.stop:
			return
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		p.inflight.Add(1)
		go p.put(ctx, n, at)
	}
}

func (p *probe) put(ctx context.Context, n int, at time.Duration) {
	defer p.inflight.Done()
	req := &pb.PutRequest{Key: probeKey(n, p.keys), Value: p.value}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	sent := time.Now()
	_, err := p.kv.Put(ctx, req)
	lat := time.Since(sent)
	late := max(sent.Sub(p.start.Add(at)), 0)
	p.mu.Lock()
	p.samples = append(p.samples, probeSample{at: at, latency: lat, err: err, late: late})
	p.mu.Unlock()
}

// finish stops sending, waits for the puts in flight and returns every
// sample.
func (p *probe) finish() []probeSample {
	close(p.stop)
	<-p.loopDone
	p.inflight.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.samples
}

// windowNames are the probe's windows around a call, in order.
var windowNames = [3]string{"before", "during", "after"}

// splitWindows sorts samples into the window before the call
// [callStart-width, callStart), the call [callStart, callEnd) and the
// window after it [callEnd, callEnd+width), and summarises each. Samples
// outside all three are dropped. wal holds the server's WAL fsync
// histogram at the four bounds of the windows.
func splitWindows(samples []probeSample, callStart, callEnd, width time.Duration, wal [4]walFsyncs) []probeWindow {
	bounds := [3][2]time.Duration{
		{callStart - width, callStart},
		{callStart, callEnd},
		{callEnd, callEnd + width},
	}
	recs := [3]*stats.Recorder{}
	var late [3]time.Duration
	for i := range recs {
		recs[i] = stats.NewRecorder(stats.Unlimited)
	}
	for _, s := range samples {
		for i, b := range bounds {
			if s.at >= b[0] && s.at < b[1] {
				recs[i].Record(s.latency, s.err)
				late[i] = max(late[i], s.late)
				break
			}
		}
	}
	out := make([]probeWindow, len(recs))
	for i, rec := range recs {
		out[i] = summarise(windowNames[i], rec, bounds[i][1]-bounds[i][0])
		out[i].MaxSendDelay = late[i].Seconds()
		if stalls, slowest, ok := wal[i+1].stallsSince(wal[i]); ok {
			out[i].WAL = &walWindow{Stalls: stalls, SlowestBound: slowest}
		}
	}
	return out
}

func summarise(name string, rec *stats.Recorder, span time.Duration) probeWindow {
	rep := rec.Report(rec.Count(), span, stats.ReportOptions{Percentiles: []float64{50, 99}})
	w := probeWindow{Name: name, Seconds: span.Seconds(), Succeeded: rep.Succeeded, Failed: rep.Failed}
	for _, pc := range rep.Percentiles {
		switch pc.P {
		case 50:
			w.P50 = pc.Latency.Seconds()
		case 99:
			w.P99 = pc.Latency.Seconds()
		}
	}
	w.Max = rep.Slowest.Seconds()
	for _, e := range rep.Errors {
		w.Errors = append(w.Errors, errorCount{Message: e.Message, Count: e.Count})
	}
	return w
}
