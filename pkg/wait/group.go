package wait

import "sync"

// Group runs goroutines until it is closed, and closing waits for them:
// what a component that leaves goroutines behind its calls needs so that
// none of them outlives it. The zero Group is ready to use.
type Group struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Go runs f on a goroutine of its own and reports true, or runs nothing
// and reports false once the group is closed.
func (g *Group) Go(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f()
	}()
	return true
}

// Close stops the group from starting goroutines, calls interrupt, which
// must make the running ones return (a context's cancel, say), and waits
// until they have.
func (g *Group) Close(interrupt func()) {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	interrupt()
	g.wg.Wait()
}
