package proxy

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// giveUp bounds every wait; tests never pass or fail on it being reached
// quickly.
const giveUp = 10 * time.Second

// server is a loopback TCP server running handle on each connection.
type server struct {
	ln       net.Listener
	handle   func(*server, net.Conn)
	wg       sync.WaitGroup
	received atomic.Int64

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func startServer(t *testing.T, handle func(*server, net.Conn)) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln, handle: handle, conns: make(map[net.Conn]struct{})}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(s.close)
	return s
}

func (s *server) addr() string { return s.ln.Addr().String() }

func (s *server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			s.handle(s, c)
		}()
	}
}

// close stops the server and waits for its goroutines; it is idempotent.
func (s *server) close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// echo writes back everything it reads.
func echo(s *server, c net.Conn) {
	n, _ := io.Copy(c, c)
	s.received.Add(n)
}

// count discards what it reads, counting bytes as they arrive.
func count(s *server, c net.Conn) {
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		s.received.Add(int64(n))
		if err != nil {
			return
		}
	}
}

func newProxy(t *testing.T, target string, seed uint64) *Proxy {
	t.Helper()
	p, err := New(Config{
		Listen: "127.0.0.1:0",
		Target: target,
		Logger: zaptest.NewLogger(t),
		Rand:   rand.New(rand.NewPCG(seed, seed)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, giveUp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func send(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	c.SetWriteDeadline(time.Now().Add(giveUp))
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
}

func expect(t *testing.T, c net.Conn, want string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(giveUp))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("reading %q: %v (got %q)", want, err, got)
	}
	if string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	send(t, c, msg)
	expect(t, c, msg)
}

// expectClosed asserts that the peer closed or reset c.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(giveUp))
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after reset: got %v, want EOF or connection reset", err)
	}
}

// expectSilence asserts that nothing arrives on c for a short while. It can
// only pass vacuously, never fail spuriously.
func expectSilence(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	n, err := c.Read(make([]byte, 1))
	if n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("expected silence, got n=%d err=%v", n, err)
	}
	c.SetReadDeadline(time.Time{})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(giveUp)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// echoCheck streams data through c to an echo server and checks it comes
// back intact; it returns an error instead of failing so goroutines can use it.
func echoCheck(c net.Conn, data []byte) error {
	c.SetDeadline(time.Now().Add(giveUp))
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		werr <- err
	}()
	got, rerr := io.ReadAll(c)
	if err := errors.Join(<-werr, rerr); err != nil {
		return err
	}
	if !bytes.Equal(got, data) {
		return errors.New("echoed data differs from what was sent")
	}
	return nil
}
