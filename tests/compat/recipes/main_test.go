// Package recipes checks that etcd's client recipes (the official
// go.etcd.io/etcd/client/v3/concurrency) and cairn's (client/concurrency,
// and the Lock and Election services built on them) exclude each other on
// the same names: they share the key layout, so a lock or leadership taken
// through one is seen as taken through the other. Every test runs against
// a cairn process built from cmd/cairn.
package recipes

import (
	"context"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/tests/harness"
)

var cairnBin string

func TestMain(m *testing.M) {
	os.Exit(harness.Main(m, harness.Builds(map[string]*string{"cairn": &cairnBin})))
}

// startCairn starts a single cairn member, stopped when the test ends, and
// returns its client address (host:port).
func startCairn(t *testing.T) string {
	t.Helper()
	hostPort := harness.FreeAddr(t)
	harness.StartMember(t, cairnBin, harness.Flags{ClientURL: "http://" + hostPort})
	return hostPort
}

// clients are the official client and cairn's, both on one member.
type clients struct {
	etcd  *clientv3.Client
	cairn *client.Client
	grpc  *grpc.ClientConn // for cairn's generated Lock and Election stubs
}

func connect(t *testing.T, hostPort string) clients {
	t.Helper()
	ec, err := clientv3.New(clientv3.Config{Endpoints: []string{hostPort}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ec.Close() })
	cc, err := client.New(client.Config{Endpoints: []string{hostPort}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	gc, err := grpc.NewClient(hostPort, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gc.Close() })
	return clients{etcd: ec, cairn: cc, grpc: gc}
}

// testCtx bounds a test that would otherwise hang on a bug.
func testCtx(t *testing.T) context.Context { return harness.Ctx(t, 30*time.Second) }

// async runs f and returns the channel of its error.
func async(f func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	return done
}

// pending fails the test if done already delivered: the call must still
// be waiting.
func pending(t *testing.T, what string, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned (%v) while it must wait", what, err)
	default:
	}
}
