package httpapi

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strings"

	"google.golang.org/grpc"
)

// tlsStateKey keys the TLS state of an HTTP/2 connection in its context.
type tlsStateKey struct{}

// newTLSHTTP2Server returns the server for HTTP/2 connections that came
// over TLS. They reach it already decrypted and with their preface
// replayed, so it speaks HTTP/2 "with prior knowledge"; the TLS state is
// carried over to every request, where gRPC (client certificate as auth
// user) and HTTP expect it. Without grpcSrv every request goes to
// httpHandler.
func newTLSHTTP2Server(grpcSrv *grpc.Server, httpHandler http.Handler) *http.Server {
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	return &http.Server{
		Protocols:         &protocols,
		ReadHeaderTimeout: sniffTimeout,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if hc, ok := c.(*tlsH2Conn); ok {
				return context.WithValue(ctx, tlsStateKey{}, &hc.state)
			}
			return ctx
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if st, ok := r.Context().Value(tlsStateKey{}).(*tls.ConnectionState); ok {
				r.TLS = st
			}
			if grpcSrv != nil && isGRPCRequest(r) {
				grpcSrv.ServeHTTP(w, r)
				return
			}
			httpHandler.ServeHTTP(w, r)
		}),
	}
}

// tlsH2Conn is a decrypted HTTP/2 connection on its way to the HTTP/2
// server. It hides the TLS state from net/http, which only speaks HTTP/2
// with prior knowledge on connections that do not look like TLS, and
// keeps it for the requests (ConnContext).
type tlsH2Conn struct {
	net.Conn
	state tls.ConnectionState
}

func newTLSH2Conn(c net.Conn) *tlsH2Conn {
	hc := &tlsH2Conn{Conn: c}
	if st, ok := c.(interface{ ConnectionState() tls.ConnectionState }); ok {
		hc.state = st.ConnectionState()
	}
	return hc
}

// isGRPCRequest tells a gRPC call from another HTTP/2 request by its
// content type, as etcd does.
func isGRPCRequest(r *http.Request) bool {
	return r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc")
}

// negotiatedH2 reports whether c is a TLS connection whose client chose
// HTTP/2 through ALPN.
func negotiatedH2(c net.Conn) bool {
	st, ok := c.(interface{ ConnectionState() tls.ConnectionState })
	return ok && st.ConnectionState().NegotiatedProtocol == "h2"
}
