package peer

import (
	"sync"

	"go.etcd.io/raft/v3"

	"github.com/cairnkv/cairn/pkg/wait"
)

// reporter calls Raft's ReportUnreachable and ReportSnapshot from its own
// goroutine. Send runs on the raft loop, and a member's Report methods
// typically wait for that very loop, so the transport never calls them
// synchronously. Unreachable reports for one peer coalesce (raft only
// needs to know once that it should probe again), so the backlog is
// bounded by the number of peers plus snapshots in flight.
type reporter struct {
	raft        Raft
	mu          sync.Mutex
	unreachable map[uint64]struct{}
	snapshots   []snapshotReport
	notify      chan struct{}
	stopc       chan struct{}
	donec       chan struct{}
}

type snapshotReport struct {
	id     uint64
	status raft.SnapshotStatus
}

func newReporter(r Raft) *reporter {
	return &reporter{raft: r, unreachable: map[uint64]struct{}{},
		notify: make(chan struct{}, 1), stopc: make(chan struct{}), donec: make(chan struct{})}
}

func (r *reporter) reportUnreachable(id uint64) {
	r.mu.Lock()
	r.unreachable[id] = struct{}{}
	r.mu.Unlock()
	r.wake()
}

func (r *reporter) reportSnapshot(id uint64, status raft.SnapshotStatus) {
	r.mu.Lock()
	r.snapshots = append(r.snapshots, snapshotReport{id, status})
	r.mu.Unlock()
	r.wake()
}

func (r *reporter) wake() {
	wait.Wake(r.notify)
}

func (r *reporter) run() {
	defer close(r.donec)
	for {
		select {
		case <-r.notify:
			r.flush()
		case <-r.stopc:
			return
		}
	}
}

// flush delivers what has piled up; snapshot outcomes go after the
// unreachable reports, so raft sees a failed snapshot's peer as
// unreachable first (as etcd reports them).
func (r *reporter) flush() {
	r.mu.Lock()
	ids := r.unreachable
	snaps := r.snapshots
	r.unreachable, r.snapshots = map[uint64]struct{}{}, nil
	r.mu.Unlock()
	for id := range ids {
		r.raft.ReportUnreachable(id)
	}
	for _, s := range snaps {
		r.raft.ReportSnapshot(s.id, s.status)
	}
}

// stop ends the goroutine; reports not yet delivered are dropped (the
// transport is going away).
func (r *reporter) stop() {
	close(r.stopc)
	<-r.donec
}
