package v3rpc

import (
	"context"
	"crypto/sha256"
	"io"
	"net"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/errs"
)

// TestOfficialClient drives the layer with etcd's own Go client.
func TestOfficialClient(t *testing.T) {
	f := fakeWithKeys(1500, 10)
	f.snapshot = []byte("a db of some bytes")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := NewServer(f, Config{KV: f, Maintenance: f})
	served := make(chan struct{})
	go func() { defer close(served); gs.Serve(l) }()
	defer func() { gs.Stop(); <-served }()

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{l.Addr().String()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	stream, err := cli.GetStream(ctx, "key", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	got, err := clientv3.GetStreamToGetResponse(stream)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != 1500 || got.Count != 1500 || got.Header.MemberId != fakeMemberID {
		t.Fatalf("GetStream: %d kvs, count %d, header %v", len(got.Kvs), got.Count, got.Header)
	}

	if _, err := cli.Put(ctx, "", "v"); err != rpctypes.ErrEmptyKey {
		t.Fatalf("empty key put: %v", err)
	}
	f.mu.Lock()
	f.err = errs.ErrCompacted
	f.mu.Unlock()
	if _, err := cli.Get(ctx, "k"); err != rpctypes.ErrCompacted {
		t.Fatalf("compacted get: %v", err)
	}
	f.mu.Lock()
	f.err = nil
	f.mu.Unlock()

	rc, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(f.snapshot)
	if string(data) != string(f.snapshot)+string(sum[:]) {
		t.Fatalf("snapshot bytes %q", data)
	}
}
