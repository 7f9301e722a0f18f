package etcdserver

import (
	"context"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Give-up bounds: a healthy one-member cluster on a 10 ms tick is ready and
// answers in milliseconds; these only keep a broken member from hanging the
// test binary.
const (
	readyTimeout = 10 * time.Second
	opTimeout    = 10 * time.Second
)

const (
	testName    = "default"
	testPeerURL = "http://localhost:2380"
)

// testConfig is a one-member new cluster on dir with a fast tick.
func testConfig(dir string) *Config {
	return &Config{
		Name:           testName,
		DataDir:        dir,
		PeerURLs:       []string{testPeerURL},
		ClientURLs:     []string{"http://localhost:2379"},
		InitialCluster: map[string][]string{testName: {testPeerURL}},
		NewCluster:     true,
		TickMs:         10,
		ElectionTicks:  10,
	}
}

// startServer opens and starts a member on cfg and waits until it serves.
// The member is stopped when the test ends (Stop is idempotent, so a test
// may also stop it itself).
func startServer(t *testing.T, cfg *Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	s.Start()
	t.Cleanup(s.Stop)
	select {
	case <-s.ReadyNotify():
	case err := <-s.Errors():
		t.Fatalf("member failed before it was ready: %v", err)
	case <-time.After(readyTimeout):
		t.Fatalf("member not ready after %v", readyTimeout)
	}
	// A new member's leader proposes the cluster version right after it is
	// ready; wait until that is applied so no proposal but the test's own is
	// in flight (this only reads the backend).
	waitFor(t, "cluster version applied", func() bool { return s.versions.clusterVersion() != "" })
	return s
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

func mustPut(t *testing.T, s *Server, key, val string) *pb.PutResponse {
	t.Helper()
	resp, err := s.KV().Put(testCtx(t), &pb.PutRequest{Key: []byte(key), Value: []byte(val)})
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return resp
}

// state is everything a restart must preserve, as seen through the API.
type state struct {
	rev      int64
	kvs      []*mvccpb.KeyValue
	hashKV   uint32
	hashRev  int64
	compRev  int64
	backHash uint32
}

func readState(t *testing.T, s *Server) state {
	t.Helper()
	ctx := testCtx(t)
	rr, err := s.KV().Range(ctx, &pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}})
	if err != nil {
		t.Fatalf("Range all: %v", err)
	}
	hkv, err := s.maint.HashKV(ctx, 0)
	if err != nil {
		t.Fatalf("HashKV: %v", err)
	}
	h, err := s.maint.Hash(ctx)
	if err != nil {
		t.Fatalf("Hash: %v", err)
	}
	return state{
		rev: rr.GetHeader().GetRevision(), kvs: rr.GetKvs(),
		hashKV: hkv.GetHash(), hashRev: hkv.GetHashRevision(), compRev: hkv.GetCompactRevision(),
		backHash: h.GetHash(),
	}
}

func compareState(t *testing.T, want, got state) {
	t.Helper()
	if got.rev != want.rev {
		t.Errorf("revision = %d, want %d", got.rev, want.rev)
	}
	if len(got.kvs) != len(want.kvs) {
		t.Fatalf("%d keys, want %d", len(got.kvs), len(want.kvs))
	}
	for i := range want.kvs {
		if !proto.Equal(got.kvs[i], want.kvs[i]) {
			t.Errorf("key %d = %v, want %v", i, got.kvs[i], want.kvs[i])
		}
	}
	if got.hashKV != want.hashKV || got.hashRev != want.hashRev || got.compRev != want.compRev {
		t.Errorf("HashKV = (hash %d, rev %d, compact %d), want (hash %d, rev %d, compact %d)",
			got.hashKV, got.hashRev, got.compRev, want.hashKV, want.hashRev, want.compRev)
	}
	if got.backHash != want.backHash {
		t.Errorf("Hash = %d, want %d", got.backHash, want.backHash)
	}
}

func key(i int) string { return fmt.Sprintf("key-%04d", i) }

// waitFor polls cond until it holds; the bound only stops a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(opTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, opTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
