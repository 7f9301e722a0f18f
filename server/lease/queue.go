package lease

import (
	"container/heap"
	"time"
)

// timeQueue orders leases by a due time, earliest first (ties by ID), with
// at most one entry per lease: the primary keeps one for expiry checks and
// one for checkpoints.
type timeQueue struct {
	h     timeHeap
	index map[LeaseID]*timedID
}

func newTimeQueue() *timeQueue {
	return &timeQueue{index: make(map[LeaseID]*timedID)}
}

// set schedules id at t, replacing its previous time.
func (q *timeQueue) set(id LeaseID, t time.Time) {
	if it, ok := q.index[id]; ok {
		it.at = t
		heap.Fix(&q.h, it.pos)
		return
	}
	it := &timedID{id: id, at: t}
	q.index[id] = it
	heap.Push(&q.h, it)
}

// remove drops id if it is queued.
func (q *timeQueue) remove(id LeaseID) {
	if it, ok := q.index[id]; ok {
		heap.Remove(&q.h, it.pos)
		delete(q.index, id)
	}
}

// peek returns the earliest entry; ok is false when the queue is empty.
func (q *timeQueue) peek() (id LeaseID, at time.Time, ok bool) {
	if len(q.h) == 0 {
		return NoLease, time.Time{}, false
	}
	return q.h[0].id, q.h[0].at, true
}

// popDue removes and returns the earliest entry if it is due at now.
func (q *timeQueue) popDue(now time.Time) (LeaseID, bool) {
	id, at, ok := q.peek()
	if !ok || at.After(now) {
		return NoLease, false
	}
	q.remove(id)
	return id, true
}

func (q *timeQueue) len() int { return len(q.h) }

type timedID struct {
	id  LeaseID
	at  time.Time
	pos int
}

// timeHeap is a container/heap of timedIDs by time, ties by ID so the order
// never depends on insertion history.
type timeHeap []*timedID

func (h timeHeap) Len() int { return len(h) }
func (h timeHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].id < h[j].id
}
func (h timeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}
func (h *timeHeap) Push(x any) {
	it := x.(*timedID)
	it.pos = len(*h)
	*h = append(*h, it)
}
func (h *timeHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}
