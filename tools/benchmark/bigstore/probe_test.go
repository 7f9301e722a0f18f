package main

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// blockingKV holds every Put until release is closed, counting the puts
// waiting at once and the keys written.
type blockingKV struct {
	pb.KVClient
	release chan struct{}

	mu      sync.Mutex
	waiting int
	keys    map[string]int
	reached chan struct{} // closed when waiting first reaches want
	want    int
}

func (k *blockingKV) Put(ctx context.Context, req *pb.PutRequest, _ ...grpc.CallOption) (*pb.PutResponse, error) {
	k.mu.Lock()
	k.waiting++
	k.keys[string(req.Key)]++
	if k.waiting == k.want {
		close(k.reached)
	}
	k.mu.Unlock()
	select {
	case <-k.release:
		return &pb.PutResponse{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestProbeIsOpenLoop shows that the probe keeps sending while earlier
// puts have not answered (a closed-loop client would stop at the first),
// cycles over its keys, and accounts for every put it sent.
func TestProbeIsOpenLoop(t *testing.T) {
	const keys, inFlight = 3, 10
	kv := &blockingKV{release: make(chan struct{}), keys: map[string]int{}, reached: make(chan struct{}), want: inFlight}
	p := startProbe(context.Background(), kv, 100*time.Microsecond, keys)
	select {
	case <-kv.reached:
	case <-time.After(time.Minute):
		t.Fatalf("the probe never had %d puts in flight at once", inFlight)
	}
	stopped := make(chan []probeSample)
	go func() { stopped <- p.finish() }()
	close(kv.release)
	samples := <-stopped

	kv.mu.Lock()
	sent := kv.waiting
	kv.mu.Unlock()
	if len(samples) != sent {
		t.Errorf("%d samples for %d puts sent", len(samples), sent)
	}
	if len(kv.keys) != keys {
		t.Errorf("puts went to keys %v, want %d distinct keys", kv.keys, keys)
	}
	seen := map[time.Duration]bool{}
	for _, s := range samples {
		if s.err != nil {
			t.Errorf("put failed: %v", s.err)
		}
		if s.at%(100*time.Microsecond) != 0 || seen[s.at] {
			t.Errorf("sample scheduled at %v: not on the schedule or twice", s.at)
		}
		seen[s.at] = true
	}
}

func TestProbeRecordsErrors(t *testing.T) {
	kv := &failingKV{err: errors.New("etcdserver: mvcc: database space exceeded")}
	p := startProbe(context.Background(), kv, time.Millisecond, 1)
	for kv.calls() < 3 {
		time.Sleep(time.Millisecond)
	}
	samples := p.finish()
	w := splitWindows(samples, 0, time.Hour, time.Hour, [4]walFsyncs{})[1]
	if w.Failed != int64(len(samples)) || w.Succeeded != 0 || len(w.Errors) != 1 || w.Errors[0].Count != w.Failed {
		t.Errorf("window %+v from %d failed puts", w, len(samples))
	}
}

type failingKV struct {
	pb.KVClient
	err error
	mu  sync.Mutex
	n   int
}

func (k *failingKV) Put(context.Context, *pb.PutRequest, ...grpc.CallOption) (*pb.PutResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.n++
	return nil, k.err
}

func (k *failingKV) calls() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n
}

func TestProbeKeys(t *testing.T) {
	if got := string(probeKey(1234, 1000)); got != "bigstore/probe/000234" {
		t.Errorf("probeKey = %q", got)
	}
}
