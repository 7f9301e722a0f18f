package peer

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"time"
)

// Connection idle timeouts. Streams use Config.ConnReadTimeout and
// ConnWriteTimeout (--raft-read-timeout, --raft-write-timeout); a stream
// writer sends a link heartbeat every ConnReadTimeout/3, so a stream that
// stays silent longer is dead.
const (
	pipelineReadTimeout   = 30 * time.Second
	pipelineWriteTimeout  = 5 * time.Second
	snapshotWriteTimeout  = 30 * time.Second
	snapshotResponseLimit = 5 * time.Second // reading the answer once the upload is done
)

// clients are the HTTP clients for the three kinds of outgoing traffic;
// they differ in how long a connection may sit idle.
type clients struct {
	stream, pipeline, snapshot *http.Client
}

func newClients(cfg Config) clients {
	d := dialSettings{timeout: cfg.DialTimeout, tls: cfg.TLS, localAddr: cfg.LocalAddr}
	return clients{
		stream:   newClient(d, cfg.ConnReadTimeout, cfg.ConnWriteTimeout),
		pipeline: newClient(d, pipelineReadTimeout, pipelineWriteTimeout),
		snapshot: newClient(d, 0, snapshotWriteTimeout),
	}
}

// dialSettings say how connections to peers are made.
type dialSettings struct {
	timeout   time.Duration
	tls       *tls.Config
	localAddr string // IP the connections leave from; "": the system's choice
}

// Dialer returns a dialer for peer connections from localAddr ("": the
// system's choice of source address).
func Dialer(timeout time.Duration, localAddr string) *net.Dialer {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if ip := net.ParseIP(localAddr); ip != nil {
		d.LocalAddr = &net.TCPAddr{IP: ip}
	}
	return d
}

func (c clients) closeIdle() {
	for _, cl := range []*http.Client{c.stream, c.pipeline, c.snapshot} {
		if cl != nil {
			cl.CloseIdleConnections()
		}
	}
}

// newClient returns an HTTP/1.1 client whose connections fail a read or
// write that makes no progress within the given time (0: no limit).
func newClient(d dialSettings, readTimeout, writeTimeout time.Duration) *http.Client {
	dialer := Dialer(d.timeout, d.localAddr)
	unixDialer := &net.Dialer{Timeout: d.timeout} // a source address means nothing to a socket file
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dl := dialer
		if network == "unix" {
			dl = unixDialer
		}
		c, err := dl.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &deadlineConn{Conn: c, read: readTimeout, write: writeTimeout}, nil
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dial,
		TLSClientConfig:     d.tls,
		TLSHandshakeTimeout: d.timeout,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     time.Minute,
	}
	return &http.Client{Transport: newSchemeTransport(tr, dial)}
}

// deadlineConn moves the connection's deadline forward before every read
// and write, turning the deadlines into idle timeouts.
type deadlineConn struct {
	net.Conn
	read, write time.Duration
}

func (c *deadlineConn) Read(b []byte) (int, error) {
	if c.read > 0 {
		if err := c.SetReadDeadline(time.Now().Add(c.read)); err != nil {
			return 0, err
		}
	}
	return c.Conn.Read(b)
}

func (c *deadlineConn) Write(b []byte) (int, error) {
	if c.write > 0 {
		if err := c.SetWriteDeadline(time.Now().Add(c.write)); err != nil {
			return 0, err
		}
	}
	return c.Conn.Write(b)
}
