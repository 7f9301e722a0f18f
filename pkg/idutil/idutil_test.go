package idutil

import (
	"testing"
	"time"
)

func TestIDsCarryMemberPrefixAndIncrease(t *testing.T) {
	g := NewGenerator(0x12, time.Unix(1700000000, 0))
	a, b := g.Next(), g.Next()
	if a>>sequenceBits != 0x12 || b>>sequenceBits != 0x12 {
		t.Fatalf("prefix lost: %x %x", a, b)
	}
	if b != a+1 {
		t.Fatalf("want consecutive ids, got %x %x", a, b)
	}
}

func TestRestartLaterStartsBeyondEarlierIDs(t *testing.T) {
	start := time.Unix(1700000000, 0)
	first := NewGenerator(7, start)
	var last uint64
	for i := 0; i < 200; i++ {
		last = first.Next()
	}
	if next := NewGenerator(7, start.Add(time.Millisecond)).Next(); next <= last {
		t.Fatalf("restart 1 ms later gave %x, not beyond %x", next, last)
	}
}

func TestSequenceWrapKeepsMemberTag(t *testing.T) {
	g := NewGenerator(0xffff, time.Unix(1700000000, 0))
	g.sequence.Store(sequenceMask)
	if id := g.Next(); id != 0xffff<<sequenceBits {
		t.Fatalf("after wrap got %x", id)
	}
}
