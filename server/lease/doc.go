// Package lease owns the leases of one member: the Lessor keeps every
// granted lease, the keys attached to it, its record in the backend's
// "lease" bucket (key: the ID, 8 bytes big endian; value: a leasepb.Lease,
// byte-identical to etcd v3.7's) and, on the leader, its expiry.
//
// # Deterministic and not
//
// Grant, Revoke, Checkpoint, Attach, Detach, Recover and RecoverAttachments
// run in the member's apply step, in log order, from one goroutine. What
// they change in memory and in the backend depends only on their arguments
// and the prior state, never on a clock or on leadership: every member ends
// with the same leases, the same records and, for Revoke, the same key
// deletions (in key order, one mvcc revision). Their writes go to the
// backend's batch; the member commits it. TTLs below the minimum are raised
// to it, so every member must be configured with the same minimum, as in
// etcd.
//
// Time matters only on the primary: the lessor of the leader, made so by
// Promote and undone by Demote. Only the primary tracks expiries (through
// the injected Clock), serves Renew (keepalives) and reports leases whose
// expiry passed on ExpiredLeasesC. It never revokes on its own: the member
// proposes a LeaseRevoke through raft and every member applies it with
// Revoke. Followers keep their leases with no expiry. A new primary counts
// every lease down afresh from its TTL plus the promotion's extension, so a
// leader change extends leases; with a Checkpointer configured (etcd's
// LeaseCheckpoint feature) the primary periodically proposes each long
// lease's remaining TTL through raft, Checkpoint records it on every
// member, and a later promotion counts down from it instead of the TTL.
//
// # Locking
//
// The apply-step methods that write the backend take the batch lock before
// the lessor's own lock and never the reverse; Revoke runs inside the
// write transaction from Config.NewTxn. So the apply step may call Attach,
// Detach, KeyPut and KeyDeleted while it holds an mvcc write transaction,
// but must call Grant, Revoke, Checkpoint and Recover outside one (they
// take the batch lock themselves).
package lease
