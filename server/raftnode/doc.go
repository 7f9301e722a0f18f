// Package raftnode drives go.etcd.io/raft for one member: it ticks the raft
// clock, and for every Ready it does the raft library's numbered duties in the
// order that keeps the member crash safe.
//
// The loop, for each Ready:
//
//  1. Record soft state (who leads) so readers of Leader() see it at once.
//  2. Publish the newest ReadState to the linearizable read loop.
//  3. A leader sends its messages before persisting (raft allows the leader to
//     append in parallel with its followers); a follower sends only after.
//  4. Persist: a snapshot first (the .snap file and its WAL marker), then the
//     HardState and entries to the WAL, fsynced when raft says MustSync.
//  5. Make the same snapshot and entries visible to raft's MemoryStorage.
//  6. Hand the committed entries (and snapshot) to the apply loop. They are on
//     disk by now, so a crash after this point replays them from the WAL.
//  7. Advance.
//
// Everything here is mechanism; what the entries mean is the apply step's
// business (server/apply, wired by server/etcdserver). The package never
// looks inside an entry.
package raftnode
