// Package mvcc owns the multi-version key space of one member: revisions,
// the in-memory key index, reads at any revision since the last compaction,
// the single write transaction, compaction, the HashKV hash and the hashes
// the recent compactions computed (compared between members to find
// corruption).
//
// Every change is stored in the backend's "key" bucket under its revision
// (8-byte big-endian main, '_', 8-byte big-endian sub, plus 't' for a
// tombstone) with a marshalled mvccpb.KeyValue as value, exactly as etcd v3.7
// stores it, so a db file moves freely between cairn and etcd. The key index
// maps each user key to its revisions, grouped into generations (creation to
// deletion); it lives only in memory and is rebuilt from the key bucket by New
// (restore.go: one pass over the bucket decoding only the index's fields,
// keys dealt by hash to shards that replay them into hash maps, then merged
// into the tree in key order). The same pass collects the leases of the live
// keys for the lessor (TakeRestoredLeases). Revisions are appended to the key
// bucket with the backend's sequential put, so its pages are packed as full
// as etcd's.
//
// The package never commits the backend: the member does, atomically with the
// consistent index it stores in the same batch. Everything mvcc writes becomes
// durable with that commit.
//
// Locking, outermost first: Store.txnMu (shared by every open transaction,
// exclusive for Compact), the backend's BatchTx (held by the write
// transaction for its whole life), Store.revMu (current and compacted
// revision) and the index's own RWMutex. Readers never wait for the writer
// longer than one index operation: they read values through the backend's
// concurrent ReadTx.
//
// Watchers (NewWatchStream) observe the key space from any readable
// revision on. Every write transaction, at its end and still holding the
// batch, queues its changes for the watch hub (no per-watcher work under
// the write locks); the hub's dispatcher goroutine hands them to the synced
// watchers of the changed keys in revision order, one response per
// revision.
// A watcher that starts in the past, or whose stream's channel was full (a
// "victim": its response is kept and retried), catches up in a background
// goroutine that reads the key bucket by revision, in batches of whole
// revisions, until it reaches the newest notified revision and joins the
// synced watchers again. Sends never block, so a slow consumer never slows
// writers down and still loses nothing; a watcher that falls behind the
// compacted revision gets one response with CompactRevision and then
// nothing more. Events share their KeyValues with the write transaction
// and with each other: they are read-only. The watchers' lock (watchHub.mu)
// is never taken by a writer; it comes before the queue's lock
// (watchHub.qmu) and revMu. The catch-up reads the backend without it,
// under txnMu held shared.
package mvcc
