package harness

import (
	"testing"

	"go.uber.org/goleak"
)

func leaker(stop <-chan struct{}) { <-stop }

func TestNoLeaks(t *testing.T) {
	if got := NoLeaks(0); got != 0 {
		t.Fatalf("nothing left behind: code %d", got)
	}
	stop := make(chan struct{})
	defer close(stop)
	go leaker(stop)
	if got := NoLeaks(0, goleak.IgnoreTopFunction("github.com/cairnkv/cairn/tests/harness.leaker")); got != 0 {
		t.Errorf("an ignored goroutine: code %d", got)
	}
	if got := NoLeaks(0); got != 1 {
		t.Errorf("a goroutine left behind: code %d, want 1", got)
	}
	if got := NoLeaks(2); got != 2 {
		t.Errorf("a failed run: code %d, want it kept", got)
	}
}
