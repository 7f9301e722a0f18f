package wait

import (
	"context"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want bool
	}{
		{"passes", live, time.Millisecond, true},
		{"no wait, live", live, 0, true},
		{"no wait, ended", ended, -time.Second, false},
		{"ended while waiting", ended, time.Hour, false},
	}
	for _, c := range cases {
		if got := Sleep(c.ctx, c.d); got != c.want {
			t.Errorf("%s: Sleep = %v, want %v", c.name, got, c.want)
		}
	}
	if !Until(live, time.Now().Add(-time.Second)) {
		t.Error("Until a past time with a live context = false, want true")
	}
}

func TestWakeNeverBlocks(t *testing.T) {
	c := make(chan struct{}, 1)
	Wake(c)
	Wake(c) // pending already: must not block
	if len(c) != 1 {
		t.Fatalf("%d wake-ups pending, want 1", len(c))
	}
	<-c
	Wake(c)
	if len(c) != 1 {
		t.Fatal("no wake-up after the pending one was taken")
	}
}
