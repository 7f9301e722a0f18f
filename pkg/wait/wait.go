// Package wait lets a goroutine wait for a result that another goroutine
// produces later under a numeric ID, lets readers wait for an index to be
// reached, sleeps that a context cuts short, wakes a goroutine without
// blocking, and waits for a group of goroutines to end. It owns no policy:
// the member uses it to pair a proposal with its apply result and a read
// with the applied index it needs; paced and backing-off loops sleep with
// it; background loops are woken with it; the client and the peer
// transport wait for the goroutines they started when they close.
package wait

import "sync"

// Registry pairs waiters with results by request ID.
type Registry struct {
	mu      sync.Mutex
	waiters map[uint64]chan any
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{waiters: make(map[uint64]chan any)} }

// Register returns the channel on which the result for id will arrive. An id
// must not be registered twice while pending.
func (r *Registry) Register(id uint64) <-chan any {
	ch := make(chan any, 1)
	r.mu.Lock()
	r.waiters[id] = ch
	r.mu.Unlock()
	return ch
}

// Trigger delivers v to the waiter of id, if any, and forgets it. It reports
// whether someone was waiting.
func (r *Registry) Trigger(id uint64, v any) bool {
	r.mu.Lock()
	ch, ok := r.waiters[id]
	delete(r.waiters, id)
	r.mu.Unlock()
	if ok {
		ch <- v
	}
	return ok
}

// TriggerAll delivers v to every pending waiter (used when stopping).
func (r *Registry) TriggerAll(v any) {
	r.mu.Lock()
	waiters := r.waiters
	r.waiters = make(map[uint64]chan any)
	r.mu.Unlock()
	for _, ch := range waiters {
		ch <- v
	}
}

// IsRegistered reports whether id has a pending waiter.
func (r *Registry) IsRegistered(id uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.waiters[id]
	return ok
}

// Index lets goroutines wait until a monotonically increasing index reaches
// a value (for example the applied index).
type Index struct {
	mu      sync.Mutex
	current uint64
	waiters map[uint64][]chan struct{}
}

// NewIndex returns an Index starting at start.
func NewIndex(start uint64) *Index {
	return &Index{current: start, waiters: make(map[uint64][]chan struct{})}
}

// Wait returns a channel that is closed once the index is >= target.
func (w *Index) Wait(target uint64) <-chan struct{} {
	ch := make(chan struct{})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.current >= target {
		close(ch)
		return ch
	}
	w.waiters[target] = append(w.waiters[target], ch)
	return ch
}

// Trigger advances the index to v and wakes every waiter at or below it.
func (w *Index) Trigger(v uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if v <= w.current {
		return
	}
	w.current = v
	for target, chs := range w.waiters {
		if target <= v {
			for _, ch := range chs {
				close(ch)
			}
			delete(w.waiters, target)
		}
	}
}

// Current returns the index.
func (w *Index) Current() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.current
}
