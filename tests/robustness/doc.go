// Package robustness runs a three-member cluster of real processes under
// client traffic while faults are injected one at a time (SIGKILL and
// restart, SIGSTOP/SIGCONT, isolation of a member or the leader through
// the peer proxies, slow peer links, a crash at a failpoint, a backend
// that reaches its quota), records every request and checks:
//
//   - the history is linearizable (porcupine) against a model of etcd's
//     key-value store with revisions: puts, deletes, compare-and-swap txns
//     and lease revocations advance the revision exactly as etcd does, and
//     every response's header revision and key-values must match; it runs
//     only on a history the other checks found no violation in, within two
//     minutes and 4 GiB of live heap (a check stopped by either fails the
//     round as "linearizability check timed out");
//   - every acknowledged write is in the cluster's revision history at the
//     revision it was acknowledged with, and every value the history holds
//     was written by some client, once;
//   - serializable reads return values at the revision that wrote them;
//   - once the faults are healed all members agree on HashKV;
//   - two prefix watches per member (watch_check_test.go), resumed after
//     failures, are ordered, unique, reliable, atomic and resumable
//     against the revision history, and their progress notifications never
//     overtake events; a failing watcher's log goes to watch-mM-W.txt.
//
// cairn is built with -tags failpoints: the failpoint fault arms a crash
// point (around the WAL save, an entry's apply, the backend commit, the
// install of a snapshot, compaction, defragmentation) on a member over
// HTTP, makes the member pass it and restarts it; a server that does not
// serve /failpoints (etcd) runs without that fault. The disk-full fault
// restarts a member with a --quota-backend-bytes just above its backend's
// size; the traffic then raises the NOSPACE alarm and the operator's
// recovery follows: default quota back, compaction (the history it
// removes is archived first), defragmentation of every member, disarm.
//
// Membership faults (faults_member_test.go) reconfigure the cluster as
// etcd's robustness suite does: member-replace (and -leader) kills a
// member, removes it through another, wipes its data dir, adds it back
// under a new ID on the same or a new peer URL, starts it with
// --initial-cluster-state existing and waits until it has applied the
// leader's committed index; learner-promote adds a fourth member as a
// learner, promotes it once the leader finds it in sync and removes it
// again. The traffic only ever uses the three original client URLs, so it
// never reaches a member that is not a voter; watches on a replaced
// member are resumed by the client from their next revision once the
// member serves again (or re-created by the watcher if the member cancels
// them), and the end-of-run checks read the replaced members like any
// other. Each membership fault's write availability (acknowledged and
// failed writes, longest stretch without an acknowledged write) is
// logged.
//
// Writes whose outcome is unknown (timeouts, unavailability, NOSPACE,
// which a member also answers for a write it applied) are resolved
// with the revision history read back after the run: a put or txn whose
// unique value was never written is dropped, one that was must apply at
// the revision that wrote it; deletes and revokes stay pending.
//
// `go test -short` runs 30 s of traffic, without -short two minutes.
// Environment: CAIRN_ROBUSTNESS_SEED fixes the seed (printed by every
// run), CAIRN_ROBUSTNESS_BINARY=etcd runs the real etcd v3.7.3 instead of
// cairn to validate the checker (or names any binary),
// CAIRN_ROBUSTNESS_DURATION overrides the traffic duration,
// CAIRN_ROBUSTNESS_FAULTS restricts the faults to the named ones
// ("membership" names all membership faults; TestRobustnessMembership
// runs only those, 10 s of traffic under -short, a minute without), and
// CAIRN_ROBUSTNESS_DIR keeps member logs and, on a violation, the porcupine
// visualization (linearizability.html) under that directory; without it
// they go to a temporary directory that is kept only if the test fails.
//
// Power cuts (faults_power_test.go: power-cut, power-cut-leader,
// power-cut-all) put each member's data dir on a lazyfs mount
// (tests/lazyfs) and drop its unsynced writes. They need root and
// /dev/fuse and slow every member down, so they run only when
// CAIRN_ROBUSTNESS_FAULTS names one of them or CAIRN_ROBUSTNESS_POWER_CUTS=1
// adds them to every other fault (what scripts/soak.sh does).
package robustness
