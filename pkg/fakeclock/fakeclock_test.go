package fakeclock

import (
	"testing"
	"time"
)

func TestAdvance(t *testing.T) {
	start := time.Unix(100, 0)
	c := New(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Now = %v, want %v", c.Now(), start)
	}
	c.Advance(3 * time.Second)
	if want := start.Add(3 * time.Second); !c.Now().Equal(want) {
		t.Fatalf("after Advance Now = %v, want %v", c.Now(), want)
	}
}
