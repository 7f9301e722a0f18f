package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/wait"
)

const (
	readBufSize = 32 << 10
	queueLen    = 128 // chunks buffered per direction while delayed
)

// link is one proxied connection: the client side and, once dialled, the
// target side. Closing it closes both and stops its goroutines.
type link struct {
	ctx    context.Context
	cancel context.CancelFunc
	client net.Conn

	mu      sync.Mutex
	conns   []net.Conn
	closed  bool
	halfs   int  // directions that ended cleanly
	started bool // forwarding began; guarded by Proxy.mu
}

func newLink(client net.Conn) *link {
	ctx, cancel := context.WithCancel(context.Background())
	return &link{ctx: ctx, cancel: cancel, client: client, conns: []net.Conn{client}}
}

// add attaches c, or closes it if the link is already closed.
func (l *link) add(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		c.Close()
		return false
	}
	l.conns = append(l.conns, c)
	return true
}

// close closes both sides; abort makes the peers see a reset, not EOF.
func (l *link) close(abort bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	l.cancel()
	for _, c := range l.conns {
		if tc, ok := c.(*net.TCPConn); ok && abort {
			tc.SetLinger(0)
		}
		c.Close()
	}
}

// halfDone records that one direction ended cleanly and reports whether
// both have.
func (l *link) halfDone() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.halfs++
	return l.halfs == 2
}

// serve accepts connections on ln until it is closed.
func (p *Proxy) serve(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.lg.Warn("accept failed", zap.Error(err))
			}
			return
		}
		l, ok := p.register(c)
		if ok && p.awaitUnpause(l) {
			p.start(l)
		}
	}
}

// register tracks a freshly accepted connection so Close and resets reach
// it even before it is forwarded.
func (p *Proxy) register(c net.Conn) (*link, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return nil, false
	}
	l := newLink(c)
	p.links[l] = struct{}{}
	return l, true
}

// awaitUnpause blocks while accepting is paused. It reports false if the
// link was closed meanwhile.
func (p *Proxy) awaitUnpause(l *link) bool {
	for {
		p.mu.Lock()
		pausec := p.pausec
		p.mu.Unlock()
		if pausec == nil {
			return l.ctx.Err() == nil
		}
		select {
		case <-pausec:
		case <-l.ctx.Done():
			return false
		}
	}
}

func (p *Proxy) start(l *link) {
	p.mu.Lock()
	l.started = true
	p.accepted++
	p.mu.Unlock()
	p.wg.Add(1)
	go p.forward(l)
}

// forward dials the target and starts the four pumps of a link.
func (p *Proxy) forward(l *link) {
	defer p.wg.Done()
	var d net.Dialer
	t, err := d.DialContext(l.ctx, "tcp", p.cfg.Target)
	if err != nil {
		p.lg.Warn("dial target failed", zap.Error(err))
		p.closeLink(l, false)
		return
	}
	if !l.add(t) {
		return
	}
	p.lg.Debug("forwarding", zap.Stringer("client", l.client.RemoteAddr()))
	p.pipe(l, tx, l.client, t)
	p.pipe(l, rx, t, l.client)
}

// pipe forwards src to dst: a reader shapes chunks and queues them, a writer
// waits out their delay and writes them in order.
func (p *Proxy) pipe(l *link, d direction, src, dst net.Conn) {
	q := make(chan chunk, queueLen)
	p.wg.Add(2)
	go p.readLoop(l, d, src, q)
	go p.writeLoop(l, d, dst, q)
}

func (p *Proxy) readLoop(l *link, d direction, src net.Conn, q chan<- chunk) {
	defer p.wg.Done()
	defer close(q)
	buf := make([]byte, readBufSize)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.enqueue(l, d, bytes.Clone(buf[:n]), q) {
			return
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				p.closeLink(l, true)
			}
			return
		}
	}
}

// enqueue shapes data and queues what survives. It reports false if the
// link closed while waiting for queue space.
func (p *Proxy) enqueue(l *link, d direction, data []byte, q chan<- chunk) bool {
	c, ok := p.shape(d, data, time.Now())
	if !ok {
		return true
	}
	select {
	case q <- c:
		return true
	case <-l.ctx.Done():
		return false
	}
}

func (p *Proxy) writeLoop(l *link, d direction, dst net.Conn, q <-chan chunk) {
	defer p.wg.Done()
	for c := range q {
		if !wait.Until(l.ctx, c.due) {
			return
		}
		if len(c.data) == 0 {
			continue
		}
		n, err := dst.Write(c.data)
		p.moved[d].Add(int64(n))
		if err != nil {
			p.closeLink(l, true)
			return
		}
	}
	p.endHalf(l, dst)
}

// endHalf propagates a clean EOF to dst, and closes the link once both
// directions have ended.
func (p *Proxy) endHalf(l *link, dst net.Conn) {
	if l.ctx.Err() != nil {
		return
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	if l.halfDone() {
		p.closeLink(l, false)
	}
}

func (p *Proxy) closeLink(l *link, abort bool) {
	l.close(abort)
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}
