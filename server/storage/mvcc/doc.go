// Package mvcc owns the multi-version key space of one member: revisions,
// the in-memory key index, reads at any revision since the last compaction,
// the single write transaction, compaction and the HashKV hash.
//
// Every change is stored in the backend's "key" bucket under its revision
// (8-byte big-endian main, '_', 8-byte big-endian sub, plus 't' for a
// tombstone) with a marshalled mvccpb.KeyValue as value, exactly as etcd v3.7
// stores it, so a db file moves freely between cairn and etcd. The key index
// maps each user key to its revisions, grouped into generations (creation to
// deletion); it lives only in memory and is rebuilt from the key bucket by New.
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
package mvcc
