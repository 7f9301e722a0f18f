package harness

import (
	"fmt"
	"net"
	"sync"
	"testing"
)

// ports remembers every port handed out by this test binary, so that two
// members started one after the other never get the same one even though
// the first has not bound it yet.
var ports = portSet{seen: map[int]bool{}, listen: listenLoopback}

type portSet struct {
	mu     sync.Mutex
	seen   map[int]bool
	listen func() (int, error) // a port the system says is free now
}

func listenLoopback() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// next returns a free port not handed out before.
func (s *portSet) next() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range 100 {
		p, err := s.listen()
		if err != nil {
			return 0, fmt.Errorf("finding a free port: %w", err)
		}
		if !s.seen[p] {
			s.seen[p] = true
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port found in 100 tries")
}

// FreePort returns a loopback TCP port that is free right now and that this
// test binary has not handed out before.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := ports.next()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// FreeAddr is FreePort as "127.0.0.1:port".
func FreeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

// FreeURL is FreePort as "http://127.0.0.1:port".
func FreeURL(t testing.TB) string {
	t.Helper()
	return "http://" + FreeAddr(t)
}
