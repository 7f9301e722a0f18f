package idutil

import (
	"testing"
	"time"
)

func TestIDsCarryMemberPrefixAndIncrease(t *testing.T) {
	g := NewGenerator(0x12, time.Unix(1700000000, 0))
	a, b := g.Next(), g.Next()
	if a>>suffixLen != 0x12 || b>>suffixLen != 0x12 {
		t.Fatalf("prefix lost: %x %x", a, b)
	}
	if b != a+1 {
		t.Fatalf("want consecutive ids, got %x %x", a, b)
	}
}
