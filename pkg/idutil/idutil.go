// Package idutil generates request IDs that are unique across the members of
// a cluster and across restarts of one member, as etcd's are: the top 16 bits
// are the low bits of the member ID, the next 40 bits a millisecond timestamp
// taken at start, the low 8 bits (plus carry) a counter.
package idutil

import (
	"sync/atomic"
	"time"
)

const (
	tsLen     = 5 * 8
	cntLen    = 8
	suffixLen = tsLen + cntLen
)

// Generator hands out IDs; safe for concurrent use.
type Generator struct {
	prefix uint64
	suffix atomic.Uint64
}

// NewGenerator returns a generator for member memberID starting at now.
func NewGenerator(memberID uint16, now time.Time) *Generator {
	g := &Generator{prefix: uint64(memberID) << suffixLen}
	ms := uint64(now.UnixNano()/int64(time.Millisecond)) & (1<<tsLen - 1)
	g.suffix.Store(ms << cntLen)
	return g
}

// Next returns the next ID.
func (g *Generator) Next() uint64 {
	s := g.suffix.Add(1)
	return g.prefix | (s & (1<<suffixLen - 1))
}
