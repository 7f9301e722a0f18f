// Package apply is where committed requests change state. The member hands
// every raft entry it commits, decoded into an InternalRaftRequest, to
// Applier.Apply, in log order, from one goroutine; Apply runs it against the
// mvcc store (Range, Put, DeleteRange, Txn, Compaction) or the alarm set
// (Alarm) and returns the response the waiting client gets.
//
// # Determinism
//
// Every member applies the same entries and must reach the same state and
// the same responses, so nothing here may depend on the member it runs on:
// no clocks, no randomness, no map iteration order, no goroutines racing to
// decide an outcome. The one input that differs between members, the
// backend's file size, feeds only the quota check; etcd accepts the same
// divergence (the request is applied on every member either way, only the
// error returned with it may differ). Apply also ignores the cancellation
// of its context: a read cut short on one member would flip a Txn's
// compares there and nowhere else.
//
// # What happens to one request
//
// Apply first asks the active alarms: a CORRUPT alarm fails every KV request
// with errs.ErrCorrupt; a NOSPACE alarm fails Put and any Txn that contains a
// Put (in either branch, nested Txns included) with errs.ErrNoSpace, while
// Range, DeleteRange, read and delete-only Txns and Compaction keep working
// so an operator can free space. Alarm requests themselves always pass, or
// the alarms could never be cleared.
//
// A Put or Txn that would grow the backend beyond the quota is still applied
// (every member must apply it alike) but answers errs.ErrNoSpace; the member
// then raises the NOSPACE alarm through raft.
//
// Requests are checked before anything is written: a Put or Txn that names a
// missing lease, or uses ignore_value/ignore_lease on a missing key, or a Txn
// that reads a compacted or future revision, fails without a partial write
// and without bumping the revision. All ops of one Txn run in one mvcc write
// transaction and share one revision; a Txn of reads only uses a read
// transaction.
//
// # Writes and durability
//
// The applier writes only through mvcc write transactions and, for alarms,
// the backend's batch transaction. It never commits the backend: the member
// commits, atomically with the consistent index of the entry it applied, so
// a crash replays whole entries.
//
// Responses carry a header with the store revision only; the member adds the
// cluster and member ids and the raft term.
package apply
