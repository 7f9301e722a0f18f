// Package peer is the raft transport between members: it carries
// go.etcd.io/raft messages over HTTP on the peer URLs, in the wire format
// of etcd's rafthttp, so that a cairn member and an etcd member can one day
// exchange messages.
//
// For every remote member the Transport keeps a peer with five ways to move
// messages:
//
//   - two long-lived streams the remote opens to us (GET
//     /raft/stream/msgapp/<ourID> and /raft/stream/message/<ourID>, the
//     response body carries our messages to it): MsgApp goes over msgappv2
//     in a compact encoding, everything else over "message", so heartbeats
//     and votes never queue behind a large append;
//   - two stream readers that open the remote's streams to us and hand what
//     arrives to the member's Raft;
//   - a pipeline (POST /raft, one message per request) used while no stream
//     is up;
//   - a snapshot sender (POST /raft/snapshot: the MsgSnap followed by the
//     backend database), which reports SnapshotFinish or SnapshotFailure.
//
// Send never blocks the raft loop: each path has a bounded queue, and a
// message that does not fit is dropped and reported with ReportUnreachable,
// which makes raft slow down replication to that peer (back-pressure
// instead of unbounded buffering). Raft tolerates lost messages.
//
// Every request carries the sender's ID, cluster ID and versions in
// X-Server-From, X-Etcd-Cluster-ID, X-Server-Version and
// X-Min-Cluster-Version; a request from another cluster or an incompatible
// version is refused with 412 Precondition Failed, a request from a removed
// member with 410 Gone (streams) or 403 Forbidden (posts).
//
// The package owns no raft state and never steps raft itself except through
// Raft.Process; it must not import the member (server/etcdserver).
package peer
