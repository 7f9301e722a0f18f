package proxy

import (
	"time"
)

// direction is which way bytes travel through the proxy.
type direction int

const (
	tx direction = iota // client -> target
	rx                  // target -> client
)

func (d direction) String() string {
	if d == tx {
		return "tx"
	}
	return "rx"
}

// faults is the fault configuration of one direction.
type faults struct {
	delay, jitter time.Duration
	blackhole     bool
	dropProb      float64
	modify        func([]byte) []byte
}

// DelayTx forwards every client chunk read from now on d±jitter late. Chunks
// keep their order: a chunk never overtakes the one read before it.
func (p *Proxy) DelayTx(d, jitter time.Duration) { p.setDelay(tx, d, jitter) }

// DelayRx is DelayTx for target->client traffic.
func (p *Proxy) DelayRx(d, jitter time.Duration) { p.setDelay(rx, d, jitter) }

// UndelayTx stops delaying client chunks read from now on; chunks already
// waiting keep their deadline.
func (p *Proxy) UndelayTx() { p.setDelay(tx, 0, 0) }

// UndelayRx is UndelayTx for target->client traffic.
func (p *Proxy) UndelayRx() { p.setDelay(rx, 0, 0) }

// BlackholeTx silently discards client bytes; connections stay open, as in
// a partition where packets vanish. A clean close (EOF) still propagates.
func (p *Proxy) BlackholeTx() { p.setBlackhole(tx, true) }

// BlackholeRx silently discards target bytes.
func (p *Proxy) BlackholeRx() { p.setBlackhole(rx, true) }

// UnblackholeTx undoes BlackholeTx; bytes discarded meanwhile stay lost.
func (p *Proxy) UnblackholeTx() { p.setBlackhole(tx, false) }

// UnblackholeRx undoes BlackholeRx.
func (p *Proxy) UnblackholeRx() { p.setBlackhole(rx, false) }

// DropTx discards each client chunk with the given probability (clamped to
// [0, 1]; 0 undoes). TCP itself never loses bytes, so this punches holes in
// the byte stream the target sees: framed protocols (gRPC, HTTP/2, raft
// streams) will see corrupt data and usually fail the connection. Use it to
// test that such failures are detected and recovered from.
func (p *Proxy) DropTx(probability float64) { p.setDrop(tx, probability) }

// DropRx is DropTx for target->client traffic.
func (p *Proxy) DropRx(probability float64) { p.setDrop(rx, probability) }

// UndropTx is DropTx(0).
func (p *Proxy) UndropTx() { p.setDrop(tx, 0) }

// UndropRx is DropRx(0).
func (p *Proxy) UndropRx() { p.setDrop(rx, 0) }

// ModifyTx passes every client chunk through fn before forwarding it; fn
// owns its argument and may return it, a new slice, or nothing. nil undoes.
func (p *Proxy) ModifyTx(fn func([]byte) []byte) { p.setModify(tx, fn) }

// ModifyRx is ModifyTx for target->client traffic.
func (p *Proxy) ModifyRx(fn func([]byte) []byte) { p.setModify(rx, fn) }

func (p *Proxy) setDelay(d direction, delay, jitter time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults[d].delay, p.faults[d].jitter = max(delay, 0), max(jitter, 0)
}

func (p *Proxy) setBlackhole(d direction, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults[d].blackhole = on
}

func (p *Proxy) setDrop(d direction, prob float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults[d].dropProb = min(max(prob, 0), 1)
}

func (p *Proxy) setModify(d direction, fn func([]byte) []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults[d].modify = fn
}

// chunk is data waiting to be written no earlier than due.
type chunk struct {
	data []byte
	due  time.Time
}

// shape applies the direction's faults to data read at time now. It reports
// false if the chunk is to be discarded.
func (p *Proxy) shape(d direction, data []byte, now time.Time) (chunk, bool) {
	p.mu.Lock()
	f := p.faults[d]
	discard := f.blackhole || (f.dropProb > 0 && p.rand.Float64() < f.dropProb)
	var late time.Duration
	if !discard {
		late = p.lateness(f)
	}
	p.mu.Unlock()
	if discard {
		p.dropped[d].Add(int64(len(data)))
		return chunk{}, false
	}
	if f.modify != nil {
		data = f.modify(data)
	}
	return chunk{data: data, due: now.Add(late)}, true
}

// lateness draws how late a chunk is forwarded: delay±jitter, never
// negative. It consumes randomness only when jitter is set. p.mu is held.
func (p *Proxy) lateness(f faults) time.Duration {
	late := f.delay
	if f.jitter > 0 {
		late += time.Duration(p.rand.Int64N(2*int64(f.jitter)+1)) - f.jitter
	}
	return max(late, 0)
}
