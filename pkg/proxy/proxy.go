// Package proxy is a fault-injecting TCP proxy for tests. It owns one
// listening socket, forwards every accepted connection to a fixed target,
// and lets a test delay, discard, drop, or rewrite the bytes in flight, pause
// accepting, and cut connections, all at runtime and per direction. Tx is the
// client->target direction and Rx is target->client.
//
// The proxy works on chunks: whatever one Read on the source connection
// returned. Faults are decided per chunk when it is read, so a fault changed
// at runtime applies to the next chunk read, on every open connection. How a
// byte stream splits into chunks is up to the kernel; tests that need exact
// per-chunk outcomes must write one message and wait for it to be handled
// (see Stats) before writing the next.
package proxy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
)

// ErrClosed is returned by operations on a closed proxy.
var ErrClosed = errors.New("proxy: closed")

// Config describes a proxy.
type Config struct {
	// Listen is the address to listen on, e.g. "127.0.0.1:0".
	Listen string
	// Target is the address every accepted connection is forwarded to.
	Target string
	// Logger receives connection-level events; nil means no logging.
	Logger *zap.Logger
	// Rand drives drop and jitter decisions; nil means a randomly seeded
	// source. The proxy serialises its use, so it may not be shared with
	// other goroutines.
	Rand *rand.Rand
}

// Stats is a snapshot of the proxy's counters.
type Stats struct {
	Accepted  int64 // connections that started forwarding, over the proxy's life
	Active    int64 // connections currently forwarding
	TxBytes   int64 // bytes written to the target
	RxBytes   int64 // bytes written to clients
	TxDropped int64 // client bytes discarded by blackhole or drop
	RxDropped int64 // target bytes discarded by blackhole or drop
}

// Proxy forwards TCP connections from its listening address to a target.
type Proxy struct {
	cfg  Config
	lg   *zap.Logger
	addr string
	wg   sync.WaitGroup // every goroutine the proxy started

	mu       sync.Mutex
	ln       net.Listener
	closed   bool
	links    map[*link]struct{}
	pausec   chan struct{} // non-nil while accepting is paused
	faults   [2]faults
	rand     *rand.Rand
	accepted int64

	moved   [2]atomic.Int64 // bytes forwarded, by direction
	dropped [2]atomic.Int64 // bytes discarded, by direction
}

// New listens on cfg.Listen and starts forwarding to cfg.Target.
func New(cfg Config) (*Proxy, error) {
	if cfg.Target == "" {
		return nil, errors.New("proxy: empty target")
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("proxy: listen %s: %w", cfg.Listen, err)
	}
	p := &Proxy{
		cfg:   cfg,
		lg:    cfg.Logger,
		addr:  ln.Addr().String(),
		ln:    ln,
		links: make(map[*link]struct{}),
		rand:  cfg.Rand,
	}
	if p.lg == nil {
		p.lg = zap.NewNop()
	}
	if p.rand == nil {
		p.rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	p.lg = p.lg.With(zap.String("proxy", p.addr), zap.String("target", cfg.Target))
	p.wg.Add(1)
	go p.serve(ln)
	return p, nil
}

// Addr returns the address clients should dial.
func (p *Proxy) Addr() string { return p.addr }

// Close stops listening, closes every connection and waits for all of the
// proxy's goroutines to exit. Closing twice is a no-op.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	ln, links := p.ln, p.takeLinksLocked()
	p.mu.Unlock()
	var err error
	if ln != nil {
		err = ln.Close()
	}
	closeAll(links, false)
	p.wg.Wait()
	return err
}

// Stats returns a snapshot of the proxy's counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	s := Stats{Accepted: p.accepted}
	for l := range p.links {
		if l.started {
			s.Active++
		}
	}
	p.mu.Unlock()
	s.TxBytes, s.RxBytes = p.moved[tx].Load(), p.moved[rx].Load()
	s.TxDropped, s.RxDropped = p.dropped[tx].Load(), p.dropped[rx].Load()
	return s
}

// PauseAccept stops the proxy from taking new connections: clients can
// still connect (the kernel completes the handshake and queues them in the
// listen backlog) but nothing is forwarded for them until UnpauseAccept. A
// connection the proxy had already accepted when pausing is held the same
// way. Established connections are unaffected.
func (p *Proxy) PauseAccept() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pausec == nil {
		p.pausec = make(chan struct{})
	}
}

// UnpauseAccept undoes PauseAccept; queued connections start forwarding.
func (p *Proxy) UnpauseAccept() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pausec != nil {
		close(p.pausec)
		p.pausec = nil
	}
}

// ResetConnections abruptly closes every current connection, on both sides,
// like a network blip: peers see a reset (or EOF). New connections work.
func (p *Proxy) ResetConnections() {
	p.mu.Lock()
	links := p.takeLinksLocked()
	p.mu.Unlock()
	p.lg.Info("resetting connections", zap.Int("count", len(links)))
	closeAll(links, true)
}

// ResetListener closes the listener, dropping connections still waiting in
// its backlog, resets every current connection as ResetConnections does, and
// listens again on the same address.
func (p *Proxy) ResetListener() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	links := p.takeLinksLocked()
	err := p.relistenLocked()
	p.mu.Unlock()
	closeAll(links, true)
	return err
}

func (p *Proxy) relistenLocked() error {
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("proxy: relisten %s: %w", p.addr, err)
	}
	p.ln = ln
	p.wg.Add(1)
	go p.serve(ln)
	return nil
}

func (p *Proxy) takeLinksLocked() []*link {
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.links = make(map[*link]struct{})
	return links
}

func closeAll(links []*link, abort bool) {
	for _, l := range links {
		l.close(abort)
	}
}
