// Package recipes checks that etcd's client recipes (the official
// go.etcd.io/etcd/client/v3/concurrency) and cairn's (client/concurrency,
// and the Lock and Election services built on them) exclude each other on
// the same names: they share the key layout, so a lock or leadership taken
// through one is seen as taken through the other. Every test runs against
// a cairn process built from cmd/cairn.
package recipes

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cairnkv/cairn/client"
)

var cairnBin string

func TestMain(m *testing.M) { os.Exit(setup(m)) }

func setup(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cairn-compat-recipes-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cairnBin = filepath.Join(dir, "cairn")
	// No -race: cairn is a black box here, and a plain build is quicker.
	build := exec.Command("go", "build", "-o", cairnBin, "github.com/cairnkv/cairn/cmd/cairn")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building cairn failed:", err)
		return 1
	}
	return m.Run()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// startCairn starts a single cairn member, stopped when the test ends, and
// returns its client address (host:port).
func startCairn(t *testing.T) string {
	t.Helper()
	hostPort := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	cmd := exec.Command(cairnBin,
		"--data-dir", filepath.Join(t.TempDir(), "data"),
		"--listen-client-urls", "http://"+hostPort, "--advertise-client-urls", "http://"+hostPort,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--name", "m0", "--initial-cluster", "m0="+peer)
	log := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = cleanEnv()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("cairn log:\n%s", log.String())
		}
	})
	deadline := time.After(60 * time.Second)
	for !strings.Contains(log.String(), "ready to serve client requests") {
		select {
		case <-exited:
			t.Fatalf("cairn exited before it was ready:\n%s", log.String())
		case <-deadline:
			t.Fatal("cairn not ready")
		case <-time.After(20 * time.Millisecond):
		}
	}
	return hostPort
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") && !strings.HasPrefix(kv, "ETCDCTL_") {
			env = append(env, kv)
		}
	}
	return env
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
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitKey blocks until key exists: a waiter has queued.
func waitKey(t *testing.T, ctx context.Context, c *client.Client, key string) {
	t.Helper()
	resp, err := c.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) > 0 {
		return
	}
	for wr := range c.Watch(ctx, key, client.WithRev(resp.Header.Revision+1)) {
		for _, ev := range wr.Events {
			if ev.Type == client.EventTypePut {
				return
			}
		}
	}
	t.Fatalf("key %q never appeared: %v", key, ctx.Err())
}

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
