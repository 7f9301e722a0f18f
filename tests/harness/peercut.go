package harness

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/cairnkv/cairn/pkg/proxy"
)

// PeerCut cuts members off from their peers in a cluster whose peer
// traffic runs through one pkg/proxy per member (member i advertises proxy
// i's address). Blackholing a member's own proxy only cuts the connections
// the others open to it; the member also opens connections to them
// (pipeline posts carrying its messages, stream requests over which the
// others send it theirs), and those pass through the others' proxies. So
// every proxy also drops the request chunks that name a cut-off member as
// their sender, in the raft transport's X-Server-From header.
type PeerCut struct {
	mu      sync.Mutex
	proxies []*proxy.Proxy
	ids     []uint64 // member IDs by index, as the header names them
	cut     map[int]bool
}

// NewPeerCut takes over filtering the outbound traffic of proxies (one per
// member, by index); the member IDs follow with SetID.
func NewPeerCut(proxies []*proxy.Proxy) *PeerCut {
	c := &PeerCut{proxies: make([]*proxy.Proxy, len(proxies)), ids: make([]uint64, len(proxies)), cut: map[int]bool{}}
	for i, p := range proxies {
		c.SetProxy(i, p)
	}
	return c
}

// SetID records member i's ID (known once the cluster runs; a member
// replacement changes it).
func (c *PeerCut) SetID(i int, id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids[i] = id
}

// SetProxy makes p member i's proxy, as when it was replaced.
func (c *PeerCut) SetProxy(i int, p *proxy.Proxy) {
	c.mu.Lock()
	c.proxies[i] = p
	c.mu.Unlock()
	p.ModifyTx(func(b []byte) []byte {
		if c.drops(i, b) {
			return nil
		}
		return b
	})
}

// drops reports whether proxy j discards chunk b: a request sent by a
// member other than j that is cut off.
func (c *PeerCut) drops(j int, b []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cut) == 0 {
		return false
	}
	lower := bytes.ToLower(b)
	for k := range c.cut {
		if k != j && bytes.Contains(lower, fmt.Appendf(nil, "x-server-from: %x\r\n", c.ids[k])) {
			return true
		}
	}
	return false
}

// Isolate cuts member i off from every other member (clients still reach
// it): its proxy discards all traffic both ways, the others discard what
// it sends, and every connection already open is reset.
func (c *PeerCut) Isolate(i int) {
	c.mu.Lock()
	c.cut[i] = true
	proxies := c.proxies
	c.mu.Unlock()
	proxies[i].BlackholeTx()
	proxies[i].BlackholeRx()
	for _, p := range proxies {
		p.ResetConnections()
	}
}

// Heal undoes Isolate(i); if i was cut off, every connection is reset so
// that no stream carries on from the middle of a discarded message.
func (c *PeerCut) Heal(i int) {
	c.mu.Lock()
	was := c.cut[i]
	delete(c.cut, i)
	proxies := c.proxies
	c.mu.Unlock()
	proxies[i].UnblackholeTx()
	proxies[i].UnblackholeRx()
	if was {
		for _, p := range proxies {
			p.ResetConnections()
		}
	}
}
