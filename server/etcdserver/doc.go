// Package etcdserver is the member: it owns the life of one cairn member and
// the path of every request through it.
//
// Starting. Bootstrap opens the data dir: a new member creates its WAL (with
// the node and cluster IDs as metadata), an empty backend, and starts raft
// with its initial peers; a restarting member loads the newest snapshot the
// WAL vouches for, replays the WAL after it into raft's MemoryStorage and
// reopens the backend, whose consistent index says which entries it already
// holds.
//
// Writing. A handler calls Put/DeleteRange/Txn/Compact/Alarm. The request is
// wrapped in an InternalRaftRequest with a fresh ID, encoded, size-checked
// (--max-request-bytes) and proposed; the caller waits on the ID. The raft
// loop (server/raftnode) persists the entry to the WAL and, once it is
// committed, hands it to the apply loop here.
//
// Applying. The apply loop takes committed entries in order. Under applyMu it
// runs each through server/apply (the only code that changes state) and then
// records the entry's index as the consistent index. The backend is committed
// only by this package and only under applyMu, and its pre-commit hook writes
// the consistent index, so the index on disk always describes exactly the
// data on disk. Entries at or below it are skipped on replay: replay after a
// crash is idempotent. The result wakes the waiting handler.
//
// Reading. A linearizable Range asks for a read barrier: the read loop
// batches every read that arrives while a ReadIndex round is in flight into
// the next round, waits until the applied index reaches the confirmed read
// index, and releases the whole batch; they then read the local store.
// Serializable reads skip the barrier.
//
// Snapshots. Every --snapshot-count applied entries the member commits the
// backend, writes a raft snapshot (.snap file plus a WAL marker), compacts
// raft's in-memory log keeping --snapshot-catchup-entries, and purges old WAL
// and snap files beyond --max-wals/--max-snapshots.
//
// Corruption. Members compare HashKV with each other (corrupt.go): before
// serving (feature gate InitialCorruptCheck, the member refuses to start on
// a mismatch), and periodically while leading (--corrupt-check-time and the
// compaction hash check, which raise a CORRUPT alarm through raft). Peers
// answer on /members/hashkv, etcd's peer endpoint.
package etcdserver
