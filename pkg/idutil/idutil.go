// Package idutil generates request IDs that are unique across the members of
// a cluster and across restarts of one member. An ID is the member's 16-bit
// tag above a 48-bit sequence; the sequence starts at the member's start time
// in milliseconds shifted past an 8-bit counter, so a member that restarts
// later begins beyond every ID it handed out before (at up to 256 IDs per
// millisecond of uptime).
package idutil

import (
	"sync/atomic"
	"time"
)

const (
	// sequenceBits is the width of the per-member part of an ID.
	sequenceBits = 48
	// perMillisecond is how many IDs fit in one millisecond of the start
	// time: the sequence starts at startMillis * perMillisecond.
	perMillisecond = 1 << 8

	sequenceMask = 1<<sequenceBits - 1
)

// Generator hands out IDs; safe for concurrent use.
type Generator struct {
	tag      uint64 // the member's bits, already in place
	sequence atomic.Uint64
}

// NewGenerator returns a generator for member memberID starting at now.
func NewGenerator(memberID uint16, now time.Time) *Generator {
	g := &Generator{tag: uint64(memberID) << sequenceBits}
	g.sequence.Store(uint64(now.UnixMilli()) * perMillisecond)
	return g
}

// Next returns the next ID.
func (g *Generator) Next() uint64 {
	return g.tag | g.sequence.Add(1)&sequenceMask
}
