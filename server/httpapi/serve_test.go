package httpapi

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func startMux(t *testing.T) (*Mux, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	m := Serve(l, gs, NewHandler(&fakeHealth{leader: 1}, nil))
	return m, l.Addr().String()
}

func checkGRPC(t *testing.T, addr string) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("gRPC over the shared port: %v %v", resp, err)
	}
}

func checkHTTP(t *testing.T, addr string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/version")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"etcdserver":"3.7.1"`) {
		t.Fatalf("HTTP over the shared port: %d %q", resp.StatusCode, body)
	}
}

// TestServeBothProtocols runs gRPC and HTTP clients against one port,
// interleaved, then shuts down gracefully.
func TestServeBothProtocols(t *testing.T) {
	m, addr := startMux(t)
	for range 3 {
		checkGRPC(t, addr)
		checkHTTP(t, addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Wait(); err != nil {
		t.Fatalf("Wait after Shutdown: %v", err)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Fatal("listener still open after Shutdown")
	}
}

// TestServeShortHTTPRequest: a request shorter than the HTTP/2 preface is
// classified by its first differing byte, not left waiting for more.
func TestServeShortHTTPRequest(t *testing.T) {
	m, addr := startMux(t)
	defer m.Close()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "GET /livez HTTP/1.0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.0 200") {
		t.Fatalf("status line %q, %v", status, err)
	}
}

// TestServeCloseCutsIdleConnections: Close returns even with a client
// connected that never sent a byte, and with a gRPC connection open.
func TestServeCloseCutsIdleConnections(t *testing.T) {
	m, addr := startMux(t)
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs")
	}
}

// TestServeShutdownDeadline: a graceful stop that cannot finish (a stream
// left open) ends at the context's deadline with the context's error.
func TestServeShutdownDeadline(t *testing.T) {
	m, addr := startMux(t)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	watch, err := healthpb.NewHealthClient(conn).Watch(watchCtx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Recv(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := m.Shutdown(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Shutdown: %v, want deadline exceeded", err)
	}
}

// TestServeHTTPOnly: without a gRPC server (--listen-client-http-urls) the
// Mux serves HTTP and closes connections that open with the plaintext
// HTTP/2 preface, as etcd's HTTP-only listeners do.
func TestServeHTTPOnly(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := Serve(l, nil, NewHandler(&fakeHealth{leader: 1}, nil))
	defer m.Close()
	checkHTTP(t, l.Addr().String())

	c, err := net.DialTimeout("tcp", l.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, http2Preface); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read after the HTTP/2 preface: %d bytes, %v; want the connection closed", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}
