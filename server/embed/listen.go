package embed

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/peek"
)

// clientAddr is one address the client URLs bind, with the schemes asked
// for on it. etcd binds each address once: http:// and https:// (or unix://
// and unixs://) URLs naming the same address share one listener, which
// tells plaintext from TLS connection by connection.
type clientAddr struct {
	first         url.URL // the first URL naming the address
	secure, plain bool
	network, addr string // "tcp" or "unix", and the address in that network
}

// groupClientURLs groups urls by the address they bind, in order of first
// appearance.
func groupClientURLs(urls []url.URL) []*clientAddr {
	var out []*clientAddr
	byAddr := map[string]*clientAddr{}
	for _, u := range urls {
		network, addr := urlAddr(u)
		ca := byAddr[network+" "+addr]
		if ca == nil {
			ca = &clientAddr{first: u, network: network, addr: addr}
			byAddr[network+" "+addr] = ca
			out = append(out, ca)
		}
		if isSecure(u) {
			ca.secure = true
		} else {
			ca.plain = true
		}
	}
	return out
}

// urlAddr is the network and address a URL binds: a unix socket's path is
// the URL's host and path ("unix://localhost:2379" is the file
// "localhost:2379"), as in etcd.
func urlAddr(u url.URL) (network, addr string) {
	if u.Scheme == "unix" || u.Scheme == "unixs" {
		return "unix", u.Host + u.Path
	}
	return "tcp", u.Host
}

// checkClientHTTPURLs refuses an address that both --listen-client-urls
// and --listen-client-http-urls name, with etcd's error.
func checkClientHTTPURLs(clientURLs, httpURLs []url.URL) error {
	bound := map[string]bool{}
	for _, u := range clientURLs {
		network, addr := urlAddr(u)
		bound[network+" "+addr] = true
	}
	for _, u := range httpURLs {
		network, addr := urlAddr(u)
		if bound[network+" "+addr] {
			return fmt.Errorf("cannot bind both --listen-client-urls and --listen-client-http-urls on the same url %s", u.String())
		}
	}
	return nil
}

// listenClientURLs binds every address of urls once. An address asked for
// with both a plaintext and a TLS scheme gets a listener that serves both.
func listenClientURLs(urls []url.URL, tlsCfg *tls.Config, lc *net.ListenConfig, lg *zap.Logger) ([]net.Listener, error) {
	var lns []net.Listener
	for _, ca := range groupClientURLs(urls) {
		l, err := listenClientAddr(ca, tlsCfg, lc, lg)
		if err != nil {
			closeAll(lns)
			return nil, err
		}
		lns = append(lns, l)
	}
	return lns, nil
}

func listenClientAddr(ca *clientAddr, tlsCfg *tls.Config, lc *net.ListenConfig, lg *zap.Logger) (net.Listener, error) {
	if !(ca.secure && ca.plain) {
		l, err := listen(ca.first, tlsCfg, lc)
		if err != nil {
			return nil, err
		}
		return logRejected(l, lg), nil
	}
	if tlsCfg == nil {
		return nil, fmt.Errorf("cannot listen on TLS for %s: KeyFile and CertFile are not presented", ca.addr)
	}
	l, err := bind(ca.network, ca.addr, lc)
	if err != nil {
		return nil, err
	}
	return &eitherListener{Listener: l, tlsCfg: tlsCfg, lg: lg}, nil
}

// tlsRecordHandshake is the first byte of every TLS connection: the record
// type of the ClientHello. No plaintext request a client URL serves (an
// HTTP/1.x method, the HTTP/2 preface) starts with it.
const tlsRecordHandshake = 0x16

// eitherListener serves plaintext and TLS on one socket: each connection is
// decrypted if its first byte opens a TLS handshake.
type eitherListener struct {
	net.Listener
	tlsCfg *tls.Config
	lg     *zap.Logger
}

// Accept returns at once; the connection decides what it is on its first
// read, in the goroutine that serves it, so a silent client never holds up
// the accept loop.
func (l *eitherListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &eitherConn{Conn: c, tlsCfg: l.tlsCfg, lg: l.lg}, nil
}

// eitherConn is a connection on an eitherListener. Until its first read
// or write it is undecided; then it is the raw connection (its first byte
// replayed) or a TLS server connection over it.
type eitherConn struct {
	net.Conn // the raw connection
	tlsCfg   *tls.Config
	lg       *zap.Logger

	once    sync.Once
	decided net.Conn // the raw connection or a TLS one over it
	tlsConn *tls.Conn
	err     error // the first read failed before a byte came
}

func (c *eitherConn) decide() {
	c.once.Do(func() {
		var first [1]byte
		n, err := c.Conn.Read(first[:])
		if n == 0 {
			c.err = err
			return
		}
		replay := peek.NewConn(c.Conn, first[:n])
		if first[0] != tlsRecordHandshake {
			c.decided = replay
			return
		}
		c.tlsConn = tls.Server(replay, c.tlsCfg)
		c.decided = &handshakeLogConn{Conn: c.tlsConn, lg: c.lg}
	})
}

func (c *eitherConn) Read(b []byte) (int, error) {
	if c.decide(); c.err != nil {
		return 0, c.err
	}
	return c.decided.Read(b)
}

func (c *eitherConn) Write(b []byte) (int, error) {
	if c.decide(); c.err != nil {
		return 0, c.err
	}
	return c.decided.Write(b)
}

// Close closes the raw connection: a TLS close_notify is not owed to a
// client that may never have finished its handshake.
func (c *eitherConn) Close() error { return c.Conn.Close() }

// SetDeadline and friends act on the raw connection, which is where a TLS
// connection's deadlines end up too; they work before the decision.
func (c *eitherConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(t) }
func (c *eitherConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(t) }
func (c *eitherConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(t) }

// ConnectionState is the TLS state of a TLS connection, the zero state
// (handshake not complete) of a plaintext one. The client mux reads it
// after its first read, once the connection has decided.
func (c *eitherConn) ConnectionState() tls.ConnectionState {
	if c.tlsConn == nil {
		return tls.ConnectionState{}
	}
	return c.tlsConn.ConnectionState()
}
