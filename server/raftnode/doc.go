// Package raftnode drives go.etcd.io/raft for one member: it ticks the raft
// clock, and for every Ready it does the raft library's numbered duties in the
// order that keeps the member crash safe.
//
// The loop, for each Ready:
//
//  1. Record soft state (who leads) so readers of Leader() see it at once.
//  2. Publish the newest ReadState to the linearizable read loop.
//  3. Hand the committed entries to the apply loop, with a channel closed
//     once step 5 is done. raft may hand out entries this member has not
//     fsynced yet (a quorum of others has); the apply loop waits for the
//     channel only for those, so applying batch N overlaps persisting batch
//     N+1 without the backend ever getting ahead of the local WAL.
//  4. A leader sends its messages before persisting (raft allows the leader
//     to append in parallel with its followers); a follower sends all but
//     its answers to appends and votes, which claim that what this Ready
//     holds is on its disk (raft's own rule for asynchronous storage).
//  5. Persist: a snapshot first (the .snap file and its WAL marker), then the
//     HardState and entries to the WAL, fsynced when raft says MustSync; then
//     make them visible to raft's MemoryStorage. A snapshot from the leader
//     is handed to the apply loop only now, once it is on disk.
//  6. A follower sends the rest of its messages (acknowledging what is now
//     durable).
//  7. Advance.
//
// Messages from peers and local proposals are queued, not stepped one by
// one: the loop steps everything queued before it looks for a Ready, so
// whatever arrived during one fsync is handled by the next Ready together.
//
// Everything here is mechanism; what the entries mean is the apply step's
// business (server/apply, wired by server/etcdserver). The package never
// looks inside an entry.
package raftnode
