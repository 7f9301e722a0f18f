package v3rpc

import (
	"net"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testClients serves f with NewServer on a loopback listener and returns
// clients connected to it; everything stops when the test ends.
type testClients struct {
	kv    pb.KVClient
	maint pb.MaintenanceClient
	conn  *grpc.ClientConn
}

// serveConfigured serves s with NewServer(s, cfg) on a loopback listener
// and returns a connection to it; both close when the test ends.
func serveConfigured(t *testing.T, s Server, cfg Config) *grpc.ClientConn {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := NewServer(s, cfg)
	served := make(chan struct{})
	go func() { defer close(served); gs.Serve(l) }()
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		gs.Stop()
		<-served
	})
	return conn
}

func serveFake(t *testing.T, f *fakeServer, cfg Config) *testClients {
	t.Helper()
	if cfg.Maintenance == nil {
		cfg.Maintenance = f
	}
	if cfg.KV == nil {
		cfg.KV = f
	}
	conn := serveConfigured(t, f, cfg)
	return &testClients{kv: pb.NewKVClient(conn), maint: pb.NewMaintenanceClient(conn), conn: conn}
}

// grpcMaxRecv lets a test client receive the large unary responses it
// compares streams with.
func grpcMaxRecv() grpc.CallOption { return grpc.MaxCallRecvMsgSize(64 << 20) }
