package wait

import "testing"

func TestRegistryDeliversOnce(t *testing.T) {
	r := NewRegistry()
	ch := r.Register(7)
	if !r.IsRegistered(7) {
		t.Fatal("7 should be registered")
	}
	if !r.Trigger(7, "done") {
		t.Fatal("trigger found no waiter")
	}
	if got := <-ch; got != "done" {
		t.Fatalf("got %v", got)
	}
	if r.Trigger(7, "again") {
		t.Fatal("second trigger should find nobody")
	}
}

func TestIndexWakesReachedTargets(t *testing.T) {
	w := NewIndex(5)
	select {
	case <-w.Wait(5):
	default:
		t.Fatal("target already reached must not block")
	}
	low, high := w.Wait(8), w.Wait(10)
	w.Trigger(9)
	select {
	case <-low:
	default:
		t.Fatal("target 8 should be released at 9")
	}
	select {
	case <-high:
		t.Fatal("target 10 released at 9")
	default:
	}
	w.Trigger(3) // never goes back
	if w.Current() != 9 {
		t.Fatalf("current = %d", w.Current())
	}
	w.Trigger(10)
	<-high
}

func TestTriggerAllReleasesEveryWaiter(t *testing.T) {
	r := NewRegistry()
	a, b := r.Register(1), r.Register(2)
	r.TriggerAll("stopped")
	if <-a != "stopped" || <-b != "stopped" {
		t.Fatal("waiters not released")
	}
	if r.IsRegistered(1) || r.IsRegistered(2) {
		t.Fatal("waiters still registered")
	}
}
