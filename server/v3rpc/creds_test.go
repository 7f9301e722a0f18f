package v3rpc

import (
	"crypto/tls"
	"net"
	"testing"

	"google.golang.org/grpc/credentials"
)

type stateConn struct {
	net.Conn
	state tls.ConnectionState
}

func (c *stateConn) ConnectionState() tls.ConnectionState { return c.state }

func TestConnTLSCredsExposesTheClientTLSState(t *testing.T) {
	plain, other := net.Pipe()
	defer plain.Close()
	defer other.Close()
	tests := []struct {
		name    string
		conn    net.Conn
		wantTLS bool
	}{
		{"plaintext", plain, false},
		{"tls before handshake", &stateConn{Conn: plain}, false},
		{"tls", &stateConn{Conn: plain, state: tls.ConnectionState{HandshakeComplete: true, ServerName: "m0"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, info, err := connTLSCreds{}.ServerHandshake(tt.conn)
			if err != nil || c != tt.conn {
				t.Fatalf("handshake: %v (conn replaced: %v)", err, c != tt.conn)
			}
			ti, ok := info.(credentials.TLSInfo)
			if ok != tt.wantTLS {
				t.Fatalf("TLS info present = %v, want %v", ok, tt.wantTLS)
			}
			if ok && ti.State.ServerName != "m0" {
				t.Fatalf("state not passed through: %+v", ti.State)
			}
		})
	}
}
