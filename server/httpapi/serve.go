package httpapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/pkg/peek"
)

// http2Preface opens every HTTP/2 connection made with prior knowledge, which
// is how gRPC clients connect.
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// sniffTimeout bounds how long a new connection may take to send the bytes
// that tell its protocol.
const sniffTimeout = 10 * time.Second

// Mux serves gRPC and HTTP/1.1 on one listener. Each accepted connection is
// classified by its first bytes: the HTTP/2 client preface goes to the gRPC
// server's own transport (grpc.Server.Serve, much faster than ServeHTTP),
// anything else to an http.Server. A connection that does not send the
// preface gets to HTTP as soon as one byte differs from it, so a short
// HTTP/1.1 request never waits for bytes that will not come.
//
// HTTP/2 over TLS (ALPN "h2") is the exception, as in etcd: curl and
// browsers speak it to the gateway and /health too, so such connections go
// to an HTTP/2 server that picks per request: gRPC's content type to
// grpc.Server.ServeHTTP, anything else to the HTTP handler. Plaintext
// HTTP/2 stays gRPC only, as etcd's is.
//
// The Mux owns the listener, the gRPC server and the http.Server: Close or
// Shutdown stops all three.
type Mux struct {
	root     net.Listener
	grpcSrv  *grpc.Server
	httpSrv  *http.Server
	grpcOnly bool // no HTTP handler: non-gRPC connections are closed
	grpcConn *handoffListener
	httpConn *handoffListener
	// h2Srv and h2Conn serve HTTP/2 over TLS; nil when grpcOnly.
	h2Srv  *http.Server
	h2Conn *handoffListener

	mu       sync.Mutex
	sniffing map[net.Conn]struct{} // connections not yet classified
	closing  bool

	wg       sync.WaitGroup // the accept loop, the sniffers and both servers
	errOnce  sync.Once
	firstErr error
}

// Serve starts serving l in the background and returns at once. grpcSrv gets
// the gRPC connections, httpHandler the HTTP/1.1 requests. A nil
// httpHandler serves gRPC only and closes other connections; a nil grpcSrv
// serves HTTP only (--listen-client-http-urls), closing connections that
// open with the plaintext HTTP/2 preface, as etcd does. Stop it with Close
// or Shutdown; Wait returns when everything has stopped.
func Serve(l net.Listener, grpcSrv *grpc.Server, httpHandler http.Handler) *Mux {
	m := &Mux{
		root:     l,
		grpcSrv:  grpcSrv,
		httpSrv:  &http.Server{Handler: httpHandler, ReadHeaderTimeout: sniffTimeout},
		grpcOnly: httpHandler == nil,
		grpcConn: newHandoffListener(l.Addr()),
		httpConn: newHandoffListener(l.Addr()),
		sniffing: map[net.Conn]struct{}{},
	}
	m.wg.Add(3)
	go func() {
		defer m.wg.Done()
		if grpcSrv != nil {
			m.recordErr(grpcSrv.Serve(m.grpcConn))
		}
	}()
	go func() { defer m.wg.Done(); m.recordErr(m.httpSrv.Serve(m.httpConn)) }()
	if !m.grpcOnly {
		m.h2Srv, m.h2Conn = newTLSHTTP2Server(grpcSrv, httpHandler), newHandoffListener(l.Addr())
		m.wg.Add(1)
		go func() { defer m.wg.Done(); m.recordErr(m.h2Srv.Serve(m.h2Conn)) }()
	}
	go func() { defer m.wg.Done(); m.acceptLoop() }()
	return m
}

// Addr is the address of the shared listener.
func (m *Mux) Addr() net.Addr { return m.root.Addr() }

// Close stops at once: the listener closes and open connections are cut.
func (m *Mux) Close() error {
	m.stopAccepting()
	if m.grpcSrv != nil {
		m.grpcSrv.Stop()
	}
	err := m.httpSrv.Close()
	if m.h2Srv != nil {
		m.h2Srv.Close()
	}
	m.wg.Wait()
	return err
}

// Shutdown stops accepting and waits for in-flight requests and RPCs to
// finish, or for ctx to end, after which it closes what remains (and returns
// ctx's error). Long-lived streams (e.g. watches) keep a graceful stop
// waiting, so callers should bound ctx.
func (m *Mux) Shutdown(ctx context.Context) error {
	m.stopAccepting()
	grpcStopped := make(chan struct{})
	go func() {
		if m.grpcSrv != nil {
			m.grpcSrv.GracefulStop()
		}
		close(grpcStopped)
	}()
	err := m.httpSrv.Shutdown(ctx)
	if m.h2Srv != nil {
		if h2Err := m.h2Srv.Shutdown(ctx); err == nil {
			err = h2Err
		}
	}
	select {
	case <-grpcStopped:
	case <-ctx.Done():
		if m.grpcSrv != nil {
			m.grpcSrv.Stop()
		}
		<-grpcStopped
		err = ctx.Err()
	}
	if err != nil {
		m.httpSrv.Close()
		if m.h2Srv != nil {
			m.h2Srv.Close()
		}
	}
	m.wg.Wait()
	return err
}

// Wait blocks until the Mux has stopped and returns the first error that
// ended serving, nil when it ended by Close or Shutdown.
func (m *Mux) Wait() error {
	m.wg.Wait()
	return m.firstErr
}

func (m *Mux) recordErr(err error) {
	if err == nil || errors.Is(err, http.ErrServerClosed) || errors.Is(err, grpc.ErrServerStopped) ||
		errors.Is(err, net.ErrClosed) || m.isClosing() {
		return
	}
	m.errOnce.Do(func() { m.firstErr = err })
}

func (m *Mux) isClosing() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closing
}

// stopAccepting closes the shared listener and the connections still being
// sniffed, and waits for the accept loop and sniffers to end. Connections
// already handed over are left to their server.
func (m *Mux) stopAccepting() {
	m.mu.Lock()
	m.closing = true
	for c := range m.sniffing {
		c.Close()
	}
	m.mu.Unlock()
	m.root.Close()
}

func (m *Mux) acceptLoop() {
	defer func() {
		m.grpcConn.Close()
		m.httpConn.Close()
		if m.h2Conn != nil {
			m.h2Conn.Close()
		}
	}()
	for {
		c, err := m.root.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue // a transient accept error; keep serving
			}
			m.recordErr(err)
			return
		}
		if !m.track(c) {
			c.Close()
			return
		}
		m.wg.Add(1)
		go func() { defer m.wg.Done(); m.dispatch(c) }()
	}
}

// track registers c as being sniffed; false when the Mux is closing.
func (m *Mux) track(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return false
	}
	m.sniffing[c] = struct{}{}
	return true
}

func (m *Mux) untrack(c net.Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sniffing, c)
}

// dispatch reads just enough of c to tell its protocol and hands it over,
// with the bytes read put back in front.
func (m *Mux) dispatch(c net.Conn) {
	isGRPC, prefix, err := sniff(c)
	m.untrack(c)
	if err != nil {
		c.Close()
		return
	}
	if !isGRPC && m.grpcOnly {
		c.Close() // HTTP is served on --listen-client-http-urls instead
		return
	}
	pc := &prefixedConn{peek.NewConn(c, prefix)}
	switch {
	case isGRPC && m.h2Conn != nil && negotiatedH2(c):
		m.h2Conn.handoff(newTLSH2Conn(pc))
	case isGRPC && m.grpcSrv == nil:
		c.Close() // HTTP only: plaintext HTTP/2 is gRPC's, which is not served here
	case isGRPC:
		m.grpcConn.handoff(pc)
	default:
		m.httpConn.handoff(pc)
	}
}

// sniff reads from c until its bytes either equal the HTTP/2 preface or
// diverge from it. It returns what it read.
func sniff(c net.Conn) (isHTTP2 bool, read []byte, err error) {
	if err := c.SetReadDeadline(time.Now().Add(sniffTimeout)); err != nil {
		return false, nil, err
	}
	buf := make([]byte, len(http2Preface))
	n := 0
	for n < len(buf) {
		k, err := c.Read(buf[n:])
		n += k
		if !bytes.HasPrefix([]byte(http2Preface), buf[:n]) {
			break
		}
		if err != nil {
			return false, nil, err
		}
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return false, nil, err
	}
	return n == len(http2Preface) && string(buf) == http2Preface, buf[:n], nil
}

// prefixedConn replays the sniffed bytes before reading on from the
// connection.
type prefixedConn struct{ *peek.Conn }

// ConnectionState reports the TLS state of the sniffed connection, so that
// gRPC (through v3rpc's transport credentials) and HTTP can still see the
// client's certificate. The zero state means the connection is plaintext.
func (pc *prefixedConn) ConnectionState() tls.ConnectionState {
	if tc, ok := pc.Conn.Conn.(interface{ ConnectionState() tls.ConnectionState }); ok {
		return tc.ConnectionState()
	}
	return tls.ConnectionState{}
}

// handoffListener is a net.Listener fed with connections by the Mux.
type handoffListener struct {
	addr      net.Addr
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func newHandoffListener(addr net.Addr) *handoffListener {
	return &handoffListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

// handoff passes c to the server accepting on l, or closes c if l is closed.
func (l *handoffListener) handoff(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }
