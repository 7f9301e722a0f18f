package peer

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestDialerLocalAddr: peer connections leave from the configured local
// address (SetMemberLocalAddr), or from the system's choice without one.
func TestDialerLocalAddr(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tt := range []struct{ local, wantIP string }{{"127.0.0.2", "127.0.0.2"}, {"", "127.0.0.1"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := Dialer(time.Second, tt.local).DialContext(ctx, "tcp", l.Addr().String())
		cancel()
		if err != nil {
			t.Fatalf("local %q: dial: %v", tt.local, err)
		}
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if ip := s.RemoteAddr().(*net.TCPAddr).IP.String(); ip != tt.wantIP {
			t.Errorf("local %q: connection from %s, want %s", tt.local, ip, tt.wantIP)
		}
		s.Close()
		c.Close()
	}
}
