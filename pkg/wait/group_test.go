package wait

import (
	"sync/atomic"
	"testing"
)

// TestGroupCloseWaitsAndRefuses runs goroutines that block until
// interrupted: Close must return only after each has, and Go must refuse
// work afterwards.
func TestGroupCloseWaitsAndRefuses(t *testing.T) {
	var g Group
	stop := make(chan struct{})
	var returned atomic.Int32
	for range 3 {
		if !g.Go(func() {
			<-stop
			returned.Add(1)
		}) {
			t.Fatal("Go refused before Close")
		}
	}
	g.Close(func() { close(stop) })
	if n := returned.Load(); n != 3 {
		t.Fatalf("Close returned with %d of 3 goroutines done", n)
	}
	if g.Go(func() { t.Error("ran after Close") }) {
		t.Fatal("Go accepted after Close")
	}
}
