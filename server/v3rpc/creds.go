package v3rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"net"

	"google.golang.org/grpc/credentials"
)

// connTLSCreds hands gRPC the TLS state of connections that were already
// decrypted before they reached it (the client port terminates TLS and then
// sniffs gRPC from HTTP), so handlers can read the client's certificate from
// the peer's AuthInfo - the member uses its common name as the auth user, as
// etcd does with --client-cert-auth. Plaintext connections get no AuthInfo.
type connTLSCreds struct{}

// tlsStater is a connection that knows the TLS state underneath it.
type tlsStater interface {
	ConnectionState() tls.ConnectionState
}

func (connTLSCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	st, ok := c.(tlsStater)
	if !ok {
		return c, nil, nil
	}
	state := st.ConnectionState()
	if !state.HandshakeComplete {
		return c, nil, nil
	}
	return c, credentials.TLSInfo{State: state, CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}, nil
}

func (connTLSCreds) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("v3rpc: server-side credentials only")
}

func (connTLSCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

func (c connTLSCreds) Clone() credentials.TransportCredentials { return c }

func (connTLSCreds) OverrideServerName(string) error { return nil }
