// Package errs holds the sentinel errors that the server's layers (mvcc,
// apply, etcdserver) return to each other. They carry etcd's messages; the
// gRPC layer (server/v3rpc) maps each of them to etcd's gRPC status, so a
// lower layer never imports gRPC. Compare with errors.Is.
package errs

import "errors"

// Storage (mvcc) errors.
var (
	// ErrCompacted: the requested revision is at or below the compacted revision.
	ErrCompacted = errors.New("mvcc: required revision has been compacted")
	// ErrFutureRev: the requested revision is above the store's current revision.
	ErrFutureRev = errors.New("mvcc: required revision is a future revision")
	// ErrNoSpace: the backend quota is exceeded (NOSPACE alarm).
	ErrNoSpace = errors.New("mvcc: database space exceeded")
)

// Request errors found while applying a request.
var (
	// ErrKeyNotFound: a Put with ignore_value or ignore_lease names a key that does not exist.
	ErrKeyNotFound = errors.New("etcdserver: key not found")
	// ErrLeaseNotFound: the request names a lease that does not exist.
	ErrLeaseNotFound = errors.New("lease not found")
	// ErrLeaseExists: LeaseGrant with an ID already in use.
	ErrLeaseExists = errors.New("lease already exists")
	// ErrLeaseTTLTooLarge: LeaseGrant with a TTL above the maximum.
	ErrLeaseTTLTooLarge = errors.New("too large lease TTL")
)

// Member (etcdserver) errors.
var (
	ErrStopped                    = errors.New("etcdserver: server stopped")
	ErrCanceled                   = errors.New("etcdserver: request cancelled")
	ErrTimeout                    = errors.New("etcdserver: request timed out")
	ErrTimeoutDueToLeaderFail     = errors.New("etcdserver: request timed out, possibly due to previous leader failure")
	ErrTimeoutDueToConnectionLost = errors.New("etcdserver: request timed out, possibly due to connection lost")
	ErrTimeoutLeaderTransfer      = errors.New("etcdserver: request timed out, leader transfer took too long")
	ErrTimeoutWaitAppliedIndex    = errors.New("etcdserver: request timed out, waiting for the applied index took too long")
	ErrLeaderChanged              = errors.New("etcdserver: leader changed")
	ErrNotLeader                  = errors.New("etcdserver: not leader")
	ErrNoLeader                   = errors.New("etcdserver: no leader")
	ErrRequestTooLarge            = errors.New("etcdserver: request is too large")
	ErrTooManyRequests            = errors.New("etcdserver: too many requests")
	ErrUnhealthy                  = errors.New("etcdserver: unhealthy cluster")
	ErrCorrupt                    = errors.New("etcdserver: corrupt cluster")
	ErrBadLeaderTransferee        = errors.New("etcdserver: bad leader transferee")
)

// Membership errors.
var (
	ErrIDRemoved               = errors.New("membership: ID removed")
	ErrIDExists                = errors.New("membership: ID exists")
	ErrIDNotFound              = errors.New("membership: ID not found")
	ErrPeerURLExists           = errors.New("membership: peerURL exists")
	ErrMemberNotLearner        = errors.New("membership: can only promote a learner member")
	ErrLearnerNotReady         = errors.New("membership: can only promote a learner member which is in sync with leader")
	ErrTooManyLearners         = errors.New("membership: too many learner members in cluster")
	ErrNotEnoughStartedMembers = errors.New("etcdserver: re-configuration failed due to not enough started members")
	ErrBadURLs                 = errors.New("etcdserver: given member URLs are invalid")
	// ErrMemberRemoved: this member was removed from the cluster and stops.
	ErrMemberRemoved = errors.New("the member has been permanently removed from the cluster")
)
