// Package etcdserver is the member: it owns the life of one cairn member and
// the path of every request through it.
//
// Starting. A bootstrapper (bootstrap.go, which needs only the
// configuration) opens the raft side of the data dir: a new member creates
// its WAL (with the node and cluster IDs as metadata) and starts raft with
// its initial peers; a restarting member loads the newest snapshot the WAL
// vouches for and replays the WAL after it into raft's MemoryStorage. The
// member then opens the backend (an empty one when new), whose consistent
// index says which entries it already holds.
//
// Writing. A handler calls Put/DeleteRange/Txn/Compact (KVService) or Alarm
// (Maintenance). The proposer wraps the request in an InternalRaftRequest
// with a fresh ID, encodes it, checks its size (--max-request-bytes) and
// proposes it; the caller waits on the ID. The raft loop (server/raftnode)
// persists the entry to the WAL and, once it is committed, hands it to the
// apply loop here.
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
//
// Concerns with a type of their own. Server is the core that wires the
// member, runs the apply loop above and owns the member's life (Start,
// Stop); the concerns around it own their state behind a narrow interface
// to the member, so each can be tested with small fakes instead of a
// running member. New hands each its parts explicitly; those that need
// several parts of the member take a memberView (member_view.go: the core,
// stores, proposer, raftView, backendCommits and KVService) as their own
// small interface.
//
// The core's own parts:
//
//   - stores (stores.go) hold the backend, mvcc store, lessor, applier,
//     auth store and open watch streams, and the store lock: every read
//     from outside the apply loop goes through a stores method that holds
//     the lock and answers "stopped" once Stop has closed them;
//   - backendCommits (commits.go) owns the apply lock, the consistent
//     index and every backend commit (the batch-interval loop, the
//     compactor's round commits, the pre-commit hook);
//   - proposer (propose.go) sends requests and conf changes through raft
//     and hands each caller its applied result (or etcd's explanation of a
//     timeout); localRequests (local_requests.go) spares the apply loop
//     decoding this member's own entries;
//   - raftView (raft_view.go) is what the member knows of raft: leadership,
//     the applied configuration and learner flag, peer connections, waits
//     for the commit index to be applied;
//   - memberRecords (member_records.go) writes applied conf changes and
//     member attributes into the members buckets and tells the transport;
//   - raftPeer (peering.go) is the member as the peer transport sees it
//     (messages into raft, removed members, snapshot dbs), and
//     membersHandler serves /members.
//
// The services and loops around it:
//
//   - KVService (kv.go) serves the KV service (writes through the
//     proposer, reads from the stores after a read barrier unless
//     serializable, the quota check that raises NOSPACE) and the member's
//     side of Watch; v3rpc gets it through Config.KV and Config.Watch;
//   - AuthAdmin (auth_admin.go) serves the Auth service over the auth store
//     (authMember: propose, read barrier, password check);
//   - authGate (auth.go) tells who sent a request and whether it may do
//     what it asks, over the auth store alone; the proposer stamps
//     proposals with it, KVService checks local reads, LeaseService its
//     lease keys;
//   - versionKeeper (version_monitor.go, downgrade.go) owns the cluster and
//     storage versions and the downgrade flag: the leader's monitors, the
//     Downgrade RPC, their backend reads and apply-time writes
//     (versionMember);
//   - LeaseService (lease.go, leasehttp.go) serves the Lease service:
//     grants, revokes and checkpoints through raft, the lessor's primary
//     role while the member leads, and the forwarding of keepalives and
//     TimeToLive to the leader over peer HTTP (leaseMember: propose,
//     leadership, peer URLs, the current lessor);
//   - MembershipAdmin (cluster.go, promote.go, reconfig_check.go) serves
//     the Cluster service: member add/remove/update/promote checked by the
//     reconfiguration rules, promotion forwarded to the leader over peer
//     HTTP, and this member's learner settings (clusterMember: members,
//     raft status, peer connections, replicating a conf change);
//   - learnerSteward (learner_auto.go) promotes caught-up learners and
//     fails over to standbys while its member leads (learnerMember: the
//     member and its MembershipAdmin);
//   - clusterJoiner (join.go) bootstraps a member joining a running
//     cluster from its configuration alone;
//   - Maintenance (maintenance.go, autodefrag.go) serves the Maintenance
//     service: status, hashes, defragmentation and its automatic turns,
//     snapshot, alarms, leader moves and the hand-over at stop, and
//     Downgrade through the versionKeeper (maintenanceMember: raft status,
//     store facts under the store lock, the backend under the apply lock);
//   - readBarrier (read.go) batches linearizable reads into ReadIndex
//     rounds and runs the read loop over the raft node (readIndexer) and
//     the applied-index waits;
//   - publisher (publish.go) proposes the member's name and client URLs
//     at start and closes ReadyNotify once they are applied (or a snapshot
//     from the leader brought them);
//   - filePurger (purge.go) trims old WAL and snap files, and
//     runWhileLeading (autocompact.go) lets the auto compactor run only
//     while the member leads;
//   - corruptionChecker (corrupt.go) runs the three hash checks and their
//     loops over a hashSource; hashKVHandler and hashFetcher
//     (corrupt_peer.go) are the two ends of the peer hash endpoint.
//
// Locks. The store lock (stores.mu) guards the identity of the stores
// (backend, mvcc store, lessor, applier): the apply loop replaces them
// when it installs a snapshot from the leader, holding it for writing, and
// every other goroutine that uses them holds it for reading through a
// stores method (rlock, withStores, currentLessor, storeStatus, ...). The
// concern types above never take these locks themselves: they reach the
// stores only through such calls. The apply lock (backendCommits.mu,
// applyMu) is held while an entry is applied and while the backend
// commits, so a commit never separates data from the consistent index that
// describes it; snapshot creation takes it too, and so do Maintenance's
// Hash and Snapshot and the peer side's snapshot copy (withApplyLock). The
// order is the apply lock before the store lock, never the reverse.
// Neither is held across a raft round: a proposal waits for its result
// with no lock held, so a slow disk delays requests but cannot deadlock
// the apply loop against a handler.
package etcdserver
