// Package compactor owns automatic compaction of the key-value history
// (--auto-compaction-mode and --auto-compaction-retention): parsing the
// retention, deciding when and to which revision to compact, and logging
// etcd's messages about it.
//
// Two modes, as in etcd v3.7:
//
//   - periodic: keep the history of the last retention (a duration). The
//     compactor samples the current revision every min(retention, 1h)/10,
//     keeps the samples of one retention, and compacts to the oldest sample
//     once a whole retention has passed since it started, then every
//     min(retention, 1h). A failed compaction is retried at the next sample.
//   - revision: keep the last retention revisions. Every 5 minutes it
//     compacts to current revision - retention, unless that is not positive
//     or was already compacted to.
//
// It never changes state itself: a compaction is a request to the member
// (Compact, a normal proposal through raft with physical false), so every
// member applies it in the same place of the log. Only the leader's
// compactor should propose: the member pauses it while it does not lead.
// Time comes from an injected Clock so that tests drive it step by step.
package compactor
