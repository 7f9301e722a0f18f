package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopMember()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// fakeKV is a minimal in-memory KV server that counts what it receives.
type fakeKV struct {
	pb.UnimplementedKVServer

	failEvery int // fail every n-th request (counted per method) when > 0
	// blockAfter, when > 0, makes puts after the first blockAfter wait for
	// their caller to give up; arrived is signalled on each such put.
	blockAfter int
	arrived    chan struct{}

	mu          sync.Mutex
	puts        int
	putKeys     map[string]bool
	ranges      []*pb.RangeRequest
	txns, txnOp int
}

func newFakeKV() *fakeKV { return &fakeKV{putKeys: map[string]bool{}} }

func (f *fakeKV) putCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.puts
}

var errInjected = status.Error(codes.Unavailable, "injected failure")

func (f *fakeKV) Put(ctx context.Context, req *pb.PutRequest) (*pb.PutResponse, error) {
	f.mu.Lock()
	f.puts++
	n := f.puts
	f.putKeys[string(req.GetKey())] = true
	f.mu.Unlock()
	if f.blockAfter > 0 && n > f.blockAfter {
		f.arrived <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if f.failEvery > 0 && n%f.failEvery == 0 {
		return nil, errInjected
	}
	return &pb.PutResponse{Header: &pb.ResponseHeader{}}, nil
}

func (f *fakeKV) Range(_ context.Context, req *pb.RangeRequest) (*pb.RangeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ranges = append(f.ranges, req)
	return &pb.RangeResponse{Header: &pb.ResponseHeader{}}, nil
}

func (f *fakeKV) Txn(_ context.Context, req *pb.TxnRequest) (*pb.TxnResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]bool{}
	for _, op := range req.GetSuccess() {
		key := string(op.GetRequestPut().GetKey())
		if seen[key] {
			return nil, status.Error(codes.InvalidArgument, "duplicate key given in txn request")
		}
		seen[key] = true
	}
	f.txns++
	f.txnOp += len(req.GetSuccess())
	return &pb.TxnResponse{Header: &pb.ResponseHeader{}, Succeeded: true}, nil
}

// fakeMaintenance answers Status as member id, believing leader leads.
type fakeMaintenance struct {
	pb.UnimplementedMaintenanceServer
	id, leader uint64
}

func (f *fakeMaintenance) Status(context.Context, *pb.StatusRequest) (*pb.StatusResponse, error) {
	return &pb.StatusResponse{Header: &pb.ResponseHeader{MemberId: f.id}, Leader: f.leader}, nil
}

// startFake serves kv (and maint, if not nil) on a loopback port until the
// test ends and returns its address.
func startFake(t *testing.T, kv *fakeKV, maint *fakeMaintenance) string {
	t.Helper()
	return serveFake(t, func(srv *grpc.Server) {
		pb.RegisterKVServer(srv, kv)
		if maint != nil {
			pb.RegisterMaintenanceServer(srv, maint)
		}
	})
}

// testReport is the part of the JSON report the tests check.
type testReport struct {
	Planned   int64 `json:"planned"`
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	NotSent   int64 `json:"not_sent"`
	Errors    []struct {
		Message string `json:"message"`
		Count   int64  `json:"count"`
	} `json:"errors"`
	Percentiles []struct{} `json:"percentiles"`
}

// runTool runs the benchmark with args after the global --endpoints and
// --report-json flags and returns its text output and parsed JSON report.
func runTool(t *testing.T, ctx context.Context, endpoints string, args ...string) (string, *testReport, error) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "report.json")
	full := append([]string{"--endpoints", endpoints, "--report-json", jsonPath}, args...)
	var stdout bytes.Buffer
	err := execute(ctx, full, &stdout, io.Discard)
	if err != nil {
		return stdout.String(), nil, err
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep testReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("bad JSON report: %v\n%s", err, raw)
	}
	return stdout.String(), &rep, nil
}

func TestCommandsEndToEnd(t *testing.T) {
	tests := []struct {
		name          string
		failEvery     int
		args          []string
		wantSucceeded int64
		wantFailed    int64
		wantText      []string
		checkServer   func(t *testing.T, kv *fakeKV)
	}{
		{
			name: "put sends every request once", args: []string{"--clients", "8", "--conns", "3", "put", "--total", "100"},
			wantSucceeded: 100, wantText: []string{"Summary:", "Response time histogram:", "99.9% in"},
			checkServer: func(t *testing.T, kv *fakeKV) { wantEqual(t, "puts", kv.puts, 100) },
		},
		{
			name: "sequential keys cover the key space", args: []string{"put", "--total", "30", "--key-space-size", "10", "--sequential-keys", "--key-size", "4"},
			wantSucceeded: 30,
			checkServer: func(t *testing.T, kv *fakeKV) {
				wantEqual(t, "distinct keys", len(kv.putKeys), 10)
				for k := range kv.putKeys {
					wantEqual(t, "key size", len(k), 4)
				}
			},
		},
		{
			name: "global flags after the command", args: []string{"put", "--clients", "4", "--precise", "--total", "10"},
			wantSucceeded: 10, wantText: []string{"Average:\t0.0"},
			checkServer: func(t *testing.T, kv *fakeKV) { wantEqual(t, "puts", kv.puts, 10) },
		},
		{
			name: "failures are counted by message and kept out of latency", failEvery: 4,
			args:          []string{"--clients", "5", "put", "--total", "100"},
			wantSucceeded: 75, wantFailed: 25,
			wantText: []string{"Error distribution:", "[25]\trpc error: code = Unavailable desc = injected failure", "75 succeeded, 25 failed, 0 not sent"},
		},
		{
			name: "range with flags after its arguments", args: []string{"--clients", "3", "range", "a", "z", "--total", "50", "--consistency", "s", "--limit", "5"},
			wantSucceeded: 50,
			checkServer: func(t *testing.T, kv *fakeKV) {
				wantEqual(t, "ranges", len(kv.ranges), 50)
				r := kv.ranges[0]
				if string(r.GetKey()) != "a" || string(r.GetRangeEnd()) != "z" || !r.GetSerializable() || r.GetLimit() != 5 {
					t.Errorf("range request = %v", r)
				}
			},
		},
		{
			name: "txn-put sends distinct keys per txn", args: []string{"--clients", "4", "txn-put", "--total", "20", "--txn-ops", "3", "--key-space-size", "5"},
			wantSucceeded: 20,
			checkServer: func(t *testing.T, kv *fakeKV) {
				wantEqual(t, "txns", kv.txns, 20)
				wantEqual(t, "txn ops", kv.txnOp, 60)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv := newFakeKV()
			kv.failEvery = tt.failEvery
			out, rep, err := runTool(t, context.Background(), startFake(t, kv, nil), tt.args...)
			if err != nil {
				t.Fatalf("execute: %v\n%s", err, out)
			}
			t.Logf("output:\n%s", out)
			if rep.Succeeded != tt.wantSucceeded || rep.Failed != tt.wantFailed || rep.NotSent != 0 {
				t.Errorf("report %+v, want %d succeeded %d failed", rep, tt.wantSucceeded, tt.wantFailed)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tt.checkServer != nil {
				kv.mu.Lock()
				defer kv.mu.Unlock()
				tt.checkServer(t, kv)
			}
		})
	}
}

func wantEqual(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, want %d", what, got, want)
	}
}

func TestInterruptAccountsForEveryRequest(t *testing.T) {
	const clients, total, served = 3, 1000, 10
	kv := newFakeKV()
	kv.blockAfter = served
	kv.arrived = make(chan struct{}, clients)
	addr := startFake(t, kv, nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancel once every client is stuck in a request the server holds.
		for range clients {
			<-kv.arrived
		}
		cancel()
	}()
	out, rep, err := runTool(t, ctx, addr, "--clients", "3", "put", "--total", "1000")
	if err != nil {
		t.Fatalf("execute: %v\n%s", err, out)
	}
	want := testReport{Planned: total, Succeeded: served, Failed: clients, NotSent: total - served - clients}
	if rep.Planned != want.Planned || rep.Succeeded != want.Succeeded || rep.Failed != want.Failed || rep.NotSent != want.NotSent {
		t.Errorf("report %+v, want %+v", rep, want)
	}
	if len(rep.Errors) != 1 || !strings.Contains(rep.Errors[0].Message, "Canceled") {
		t.Errorf("errors = %+v, want only cancellations", rep.Errors)
	}
}

func TestTargetLeader(t *testing.T) {
	follower, leader := newFakeKV(), newFakeKV()
	followerAddr := startFake(t, follower, &fakeMaintenance{id: 1, leader: 2})
	leaderAddr := startFake(t, leader, &fakeMaintenance{id: 2, leader: 2})

	endpoints := "http://" + followerAddr + "," + leaderAddr
	if _, _, err := runTool(t, context.Background(), endpoints, "--target-leader", "--conns", "4", "put", "--total", "40"); err != nil {
		t.Fatal(err)
	}
	wantEqual(t, "follower puts", follower.putCount(), 0)
	wantEqual(t, "leader puts", leader.putCount(), 40)

	leaderless := startFake(t, newFakeKV(), &fakeMaintenance{id: 1, leader: 0})
	if _, _, err := runTool(t, context.Background(), leaderless, "--target-leader", "put"); err == nil {
		t.Error("want an error when no endpoint is leader")
	}
}

func TestDialFailureIsAnError(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens here any more
	_, _, err = runTool(t, context.Background(), addr, "--dial-timeout", "200ms", "put", "--total", "1")
	if err == nil || errors.Is(err, errUsage) {
		t.Errorf("err = %v, want a dial error", err)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"no command", nil},
		{"unknown command", []string{"delete"}},
		{"unknown flag", []string{"put", "--nope"}},
		{"range without key", []string{"range"}},
		{"range with three args", []string{"range", "a", "b", "c"}},
		{"bad consistency", []string{"range", "a", "--consistency", "x"}},
		{"negative limit", []string{"range", "a", "--limit", "-1"}},
		{"zero total", []string{"put", "--total", "0"}},
		{"put takes no args", []string{"put", "extra"}},
		{"key space too big for key size", []string{"put", "--key-size", "1", "--key-space-size", "257"}},
		{"txn ops exceed key space", []string{"txn-put", "--txn-ops", "3", "--key-space-size", "2"}},
		{"zero clients", []string{"--clients", "0", "put"}},
		{"empty endpoints", []string{"--endpoints", " , ", "put"}},
		{"https endpoint is refused", []string{"--endpoints", "https://127.0.0.1:1", "put"}},
		{"negative rate", []string{"--rate", "-1", "put"}},
		{"leader and all members", []string{"--target-leader", "--all-members", "put"}},
		{"rss pid not a number", []string{"--rss-pid", "cairn", "put"}},
		{"negative rw ratio", []string{"txn-mixed", "--rw-ratio", "-0.5"}},
		{"infinite rw ratio", []string{"txn-mixed", "--rw-ratio", "inf"}},
		{"txn-mixed bad consistency", []string{"txn-mixed", "--consistency", "x"}},
		{"txn-mixed negative limit", []string{"txn-mixed", "--limit", "-1"}},
		{"txn-mixed takes no args", []string{"txn-mixed", "foo"}},
		{"watch-get without watchers", []string{"watch-get", "--watchers", "0"}},
		{"watch-get without streams", []string{"watch-get", "--streams", "0"}},
		{"watch-get without events", []string{"watch-get", "--events", "0"}},
		{"watch-get zero gets", []string{"watch-get", "--get-total", "0"}},
		{"watch-get bad consistency", []string{"watch-get", "--consistency", "q"}},
		{"stm bad isolation", []string{"stm", "--isolation", "x"}},
		{"stm more keys per txn than keys", []string{"stm", "--keys", "2", "--keys-per-txn", "3"}},
		{"stm zero keys", []string{"stm", "--keys", "0"}},
		{"stm write percent above 100", []string{"stm", "--txn-wr-percent", "101"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := execute(context.Background(), tt.args, io.Discard, io.Discard)
			if err == nil {
				t.Fatal("want an error")
			}
			if tt.name != "https endpoint is refused" && !errors.Is(err, errUsage) {
				t.Errorf("err = %v, want a usage error", err)
			}
		})
	}
}

func TestHelpIsNotAnError(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"put", "--help"}} {
		if err := execute(context.Background(), args, io.Discard, io.Discard); exitCode(err, io.Discard) != 0 {
			t.Errorf("%v: exit code %d (%v), want 0", args, exitCode(err, io.Discard), err)
		}
	}
}

// serveFake serves the gRPC services register adds on a free local port
// until the test ends, and returns the address.
func serveFake(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	register(srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return lis.Addr().String()
}
