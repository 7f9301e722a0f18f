package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc"
)

// fakeWatchKV is an in-memory server with just enough KV, Watch and Lease
// to drive the stream commands: every put gets the next revision and is
// sent, in revision order, to every watcher whose range holds the key.
type fakeWatchKV struct {
	pb.UnimplementedKVServer
	pb.UnimplementedWatchServer
	pb.UnimplementedLeaseServer

	// drop, when set, makes the server skip the event of revision rev for
	// watcher id.
	drop func(id, rev int64) bool
	// expireAfter, when > 0, answers keepalives after the first
	// expireAfter with TTL 0, as for an expired lease.
	expireAfter int

	mu         sync.Mutex
	rev        int64
	nextID     int64
	subs       map[int64]*fakeSub
	leases     map[int64]bool
	keepalives int
	grants     int
	revokes    int
}

type fakeSub struct {
	key, end []byte
	out      chan *pb.WatchResponse
}

func newFakeWatchKV() *fakeWatchKV {
	return &fakeWatchKV{subs: map[int64]*fakeSub{}, leases: map[int64]bool{}}
}

func (s *fakeSub) covers(key []byte) bool {
	switch {
	case len(s.end) == 0:
		return bytes.Equal(key, s.key)
	case bytes.Equal(s.end, []byte{0}):
		return bytes.Compare(key, s.key) >= 0
	default:
		return bytes.Compare(key, s.key) >= 0 && bytes.Compare(key, s.end) < 0
	}
}

func (f *fakeWatchKV) Put(_ context.Context, req *pb.PutRequest) (*pb.PutResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rev++
	for id, sub := range f.subs {
		if !sub.covers(req.GetKey()) || (f.drop != nil && f.drop(id, f.rev)) {
			continue
		}
		ev := &mvccpb.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: req.GetKey(), Value: req.GetValue(), ModRevision: f.rev}}
		sub.out <- &pb.WatchResponse{Header: &pb.ResponseHeader{Revision: f.rev}, WatchId: id, Events: []*mvccpb.Event{ev}}
	}
	return &pb.PutResponse{Header: &pb.ResponseHeader{Revision: f.rev}}, nil
}

func (f *fakeWatchKV) Watch(stream pb.Watch_WatchServer) error {
	out := make(chan *pb.WatchResponse, 1<<14)
	var ids []int64
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for {
			select {
			case resp := <-out:
				if stream.Send(resp) != nil {
					return
				}
			case <-stream.Context().Done():
				return
			}
		}
	}()
	defer func() {
		f.mu.Lock()
		for _, id := range ids {
			delete(f.subs, id)
		}
		f.mu.Unlock()
		<-sent
	}()
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		create := req.GetCreateRequest()
		if create == nil {
			continue
		}
		f.mu.Lock()
		id := f.nextID
		f.nextID++
		ids = append(ids, id)
		f.subs[id] = &fakeSub{key: create.GetKey(), end: create.GetRangeEnd(), out: out}
		out <- &pb.WatchResponse{Header: &pb.ResponseHeader{Revision: f.rev}, WatchId: id, Created: true}
		f.mu.Unlock()
	}
}

func (f *fakeWatchKV) LeaseGrant(_ context.Context, req *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grants++
	id := int64(1000 + f.grants)
	f.leases[id] = true
	return &pb.LeaseGrantResponse{Header: &pb.ResponseHeader{}, ID: id, TTL: req.GetTTL()}, nil
}

func (f *fakeWatchKV) LeaseRevoke(_ context.Context, req *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revokes++
	delete(f.leases, req.GetID())
	return &pb.LeaseRevokeResponse{Header: &pb.ResponseHeader{}}, nil
}

func (f *fakeWatchKV) LeaseKeepAlive(stream pb.Lease_LeaseKeepAliveServer) error {
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		f.mu.Lock()
		f.keepalives++
		ttl := int64(60)
		if !f.leases[req.GetID()] || (f.expireAfter > 0 && f.keepalives > f.expireAfter) {
			ttl = 0
		}
		f.mu.Unlock()
		if err := stream.Send(&pb.LeaseKeepAliveResponse{Header: &pb.ResponseHeader{}, ID: req.GetID(), TTL: ttl}); err != nil {
			return err
		}
	}
}

func startWatchFake(t *testing.T, f *fakeWatchKV) string {
	t.Helper()
	return serveFake(t, func(srv *grpc.Server) {
		pb.RegisterKVServer(srv, f)
		pb.RegisterWatchServer(srv, f)
		pb.RegisterLeaseServer(srv, f)
	})
}

type testWatchReport struct {
	Puts       testReport     `json:"puts"`
	Events     testReport     `json:"events"`
	SlowEvents *testReport    `json:"slow_events"`
	Delivery   deliveryReport `json:"delivery"`
}

// runStreamTool runs a stream command and decodes its JSON report into out.
func runStreamTool(t *testing.T, addr string, out any, args ...string) (string, error) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "report.json")
	var stdout bytes.Buffer
	err := execute(context.Background(), append([]string{"--endpoints", addr, "--report-json", jsonPath}, args...), &stdout, io.Discard)
	raw, readErr := os.ReadFile(jsonPath)
	if readErr != nil {
		t.Fatalf("no JSON report (run error %v): %v\n%s", err, readErr, stdout.String())
	}
	if jerr := json.Unmarshal(raw, out); jerr != nil {
		t.Fatalf("bad JSON report: %v\n%s", jerr, raw)
	}
	return stdout.String(), err
}

// mustRunStreamTool is runStreamTool for a run that must succeed; it
// returns the run's output.
func mustRunStreamTool(t *testing.T, addr string, out any, args ...string) string {
	t.Helper()
	stdout, err := runStreamTool(t, addr, out, args...)
	if err != nil {
		t.Fatalf("execute: %v\n%s", err, stdout)
	}
	return stdout
}

func TestWatchLatencyEndToEnd(t *testing.T) {
	f := newFakeWatchKV()
	var rep testWatchReport
	out := mustRunStreamTool(t, startWatchFake(t, f), &rep, "--conns", "2", "--clients", "3",
		"watch-latency", "--watchers", "7", "--streams", "3", "--put-total", "50", "--key-space-size", "4", "--key-size", "2")
	t.Logf("output:\n%s", out)
	d := rep.Delivery
	if d.ExpectedEvents != 350 || d.ReceivedEvents != 350 || d.MissingEvents != 0 || d.CompleteFast != 7 || d.PutsSucceeded != 50 {
		t.Errorf("delivery = %+v, want all 350 events to 7 complete watchers", d)
	}
	if d.Duplicates+d.OutOfOrder+d.Unexpected != 0 {
		t.Errorf("anomalies in %+v", d)
	}
	if rep.Puts.Succeeded != 50 || rep.Events.Succeeded != 350 || rep.Events.Planned != 350 || rep.SlowEvents != nil {
		t.Errorf("puts %+v events %+v slow %v", rep.Puts, rep.Events, rep.SlowEvents)
	}
	for _, want := range []string{"=== Puts", "Puts/sec:", "=== Put-to-event latency, 7 watchers", "Events/sec:", "0 missing", "99.9% in", "Watchers complete:\t7 of 7"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rev != 50 {
		t.Errorf("server saw %d puts, want 50", f.rev)
	}
}

func TestWatchSlowWatchersGetEverything(t *testing.T) {
	var rep testWatchReport
	out := mustRunStreamTool(t, startWatchFake(t, newFakeWatchKV()), &rep,
		"watch", "--watchers", "4", "--streams", "2", "--put-total", "20", "--slow-watchers", "2", "--slow-delay", "2ms")
	d := rep.Delivery
	if d.CompleteFast != 4 || d.CompleteSlow != 2 || d.ReceivedEvents != 120 || d.ExpectedEvents != 120 {
		t.Errorf("delivery = %+v", d)
	}
	if rep.SlowEvents == nil || rep.SlowEvents.Succeeded != 40 || rep.Events.Succeeded != 80 {
		t.Errorf("events %+v slow %+v", rep.Events, rep.SlowEvents)
	}
	if !strings.Contains(out, "2 slow watchers") || !strings.Contains(out, "slow 2 of 2") {
		t.Errorf("output:\n%s", out)
	}
}

func TestWatchLostEventFailsTheCheck(t *testing.T) {
	f := newFakeWatchKV()
	f.drop = func(id, rev int64) bool { return id == 1 && rev == 5 }
	var rep testWatchReport
	out, err := runStreamTool(t, startWatchFake(t, f), &rep,
		"watch-latency", "--watchers", "3", "--streams", "1", "--put-total", "10", "--wait-timeout", "300ms")
	if err == nil {
		t.Fatalf("want an error for a lost event\n%s", out)
	}
	d := rep.Delivery
	if d.MissingEvents != 1 || d.ReceivedEvents != 29 || d.CompleteFast != 2 {
		t.Errorf("delivery = %+v, want one missing event and 2 complete watchers", d)
	}
	if rep.Events.NotSent != 1 || !strings.Contains(out, "1 missing") {
		t.Errorf("events %+v\n%s", rep.Events, out)
	}
}

// TestAccount checks the per-event bookkeeping on hand-made events.
func TestAccount(t *testing.T) {
	r := newWatchRun(&watchConfig{putTotal: 4, watchers: 1}, 0)
	r.sendAt[0].Store(int64(10 * time.Millisecond))
	r.sendAt[1].Store(int64(20 * time.Millisecond))
	w := r.watchers[0]
	ev := func(seq uint64, rev int64, valLen int) watchEvent {
		v := make([]byte, valLen)
		if valLen >= 8 {
			binary.BigEndian.PutUint64(v, seq)
		}
		return decodedEvent(t, &mvccpb.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{ModRevision: rev, Value: v}})
	}
	steps := []struct {
		name    string
		ev      watchEvent
		wantLat time.Duration
		wantOK  bool
	}{
		{"first event", ev(0, 5, 8), 25 * time.Millisecond, true},
		{"second event", ev(1, 6, 16), 15 * time.Millisecond, true},
		{"duplicate", ev(1, 7, 8), 0, false},
		{"older revision (also a duplicate)", ev(0, 4, 8), 0, false},
		{"short value", ev(0, 8, 3), 0, false},
		{"sequence out of range", ev(9, 9, 8), 0, false},
		{"put not yet sent", ev(2, 10, 8), 0, false},
		{"delete", decodedEvent(t, &mvccpb.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{ModRevision: 11}}), 0, false},
	}
	for _, s := range steps {
		lat, ok := r.account(w, s.ev, 35*time.Millisecond)
		if lat != s.wantLat || ok != s.wantOK {
			t.Errorf("%s: got (%v, %v), want (%v, %v)", s.name, lat, ok, s.wantLat, s.wantOK)
		}
	}
	if w.distinct != 2 || w.duplicates != 2 || w.outOfOrder != 1 || w.unexpected != 4 || r.delivered.Load() != 2 {
		t.Errorf("state = %+v, delivered %d", w, r.delivered.Load())
	}
}

func TestPlanStreams(t *testing.T) {
	c := &watchConfig{watchers: 10, streams: 3, slowWatchers: 2}
	plans := c.planStreams(2)
	var sizes []int
	for i, p := range plans {
		sizes = append(sizes, len(p.watchers))
		if p.conn != i%2 {
			t.Errorf("stream %d on conn %d", i, p.conn)
		}
		if p.slow != (i >= 3) {
			t.Errorf("stream %d slow = %v", i, p.slow)
		}
	}
	if want := []int{4, 3, 3, 1, 1}; !slices.Equal(sizes, want) {
		t.Errorf("stream sizes %v, want %v", sizes, want)
	}
	if plans[3].watchers[0] != 10 || plans[4].watchers[0] != 11 {
		t.Errorf("slow watchers %v %v", plans[3].watchers, plans[4].watchers)
	}
	// More streams than watchers: no empty streams.
	if got := (&watchConfig{watchers: 2, streams: 5}).planStreams(1); len(got) != 2 {
		t.Errorf("%d streams for 2 watchers", len(got))
	}
}

func TestWatchRange(t *testing.T) {
	tests := []struct {
		keys     keySpec
		key, end []byte
	}{
		{keySpec{size: 3, space: 1}, []byte{0, 0, 0}, nil},
		{keySpec{size: 2, space: 300}, []byte{0, 0}, []byte{1, 44}},
		{keySpec{size: 1, space: 256}, []byte{0}, []byte{0}},
	}
	for _, tt := range tests {
		key, end := (&watchConfig{keys: tt.keys}).watchRange()
		if !bytes.Equal(key, tt.key) || !bytes.Equal(end, tt.end) {
			t.Errorf("%+v: got [%v, %v), want [%v, %v)", tt.keys, key, end, tt.key, tt.end)
		}
	}
}

func TestPutPacing(t *testing.T) {
	c := &watchConfig{putRate: 200}
	if got := c.dueAfter(100); got != 500*time.Millisecond {
		t.Errorf("put 100 at 200/s due after %v, want 500ms", got)
	}
	if got := (&watchConfig{}).dueAfter(100); got != 0 {
		t.Errorf("unpaced put due after %v", got)
	}
	// 11 puts at 100/s: the last is due 100ms after the first.
	var rep testWatchReport
	start := time.Now()
	mustRunStreamTool(t, startWatchFake(t, newFakeWatchKV()), &rep, "--clients", "4",
		"watch-latency", "--watchers", "1", "--put-total", "11", "--put-rate", "100")
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("paced run took %v, want at least 100ms", took)
	}
}

// leaseCalls counts the lease calls the fake server saw.
type leaseCalls struct{ keepalives, grants, revokes int }

func TestLeaseCommandsEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		cmd, rateLine string
		want          leaseCalls
	}{
		// Four clients keep one lease each alive and revoke it at the end.
		{"lease-keepalive", "Keepalives/sec:", leaseCalls{keepalives: 100, grants: 4, revokes: 4}},
		// Every lease granted is revoked after the run.
		{"lease-grant", "Grants/sec:", leaseCalls{grants: 100, revokes: 100}},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			f := newFakeWatchKV()
			var rep testReport
			out := mustRunStreamTool(t, startWatchFake(t, f), &rep, "--clients", "4", "--conns", "2", tc.cmd, "--total", "100")
			if rep.Planned != 100 || rep.Succeeded != 100 || rep.Failed != 0 || len(rep.Percentiles) == 0 {
				t.Errorf("report %+v", rep)
			}
			if !strings.Contains(out, tc.rateLine) {
				t.Errorf("output lacks %q:\n%s", tc.rateLine, out)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if got := (leaseCalls{f.keepalives, f.grants, f.revokes}); got != tc.want {
				t.Errorf("server saw %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLeaseKeepAliveCountsExpiredLease(t *testing.T) {
	f := newFakeWatchKV()
	f.expireAfter = 30
	var rep testReport
	mustRunStreamTool(t, startWatchFake(t, f), &rep, "--clients", "2", "lease-keepalive", "--total", "50")
	if rep.Succeeded != 30 || rep.Failed != 20 || len(rep.Errors) != 1 || rep.Errors[0].Message != errLeaseNotFound.Error() {
		t.Errorf("report %+v", rep)
	}
}

func TestStreamCommandUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"watch-latency", "--val-size", "7"},
		{"watch-latency", "--watchers", "0"},
		{"watch-latency", "--streams", "0"},
		{"watch-latency", "--put-total", "0"},
		{"watch-latency", "--put-rate", "-1"},
		{"watch-latency", "--slow-watchers", "1"}, // only the watch command has it
		{"watch", "--slow-delay", "-1s"},
		{"watch-latency", "extra"},
		{"lease-keepalive", "--ttl", "0"},
		{"lease-keepalive", "--total", "0"},
		{"lease-grant", "--ttl", "0"},
		{"lease-grant", "extra"},
	} {
		err := execute(context.Background(), args, io.Discard, io.Discard)
		if !errors.Is(err, errUsage) {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
}
