// Package client is cairn's Go client for the etcd v3 gRPC API.
//
// A Client holds one gRPC ClientConn. A manual resolver hands the conn every
// configured endpoint, and gRPC's round_robin balancer keeps one
// sub-connection per endpoint and spreads requests over the ready ones. This
// is the design of etcd's "clientv3-grpc1.23" client.
//
// Retries live in a unary and a stream interceptor. Requests that may be
// repeated without changing their outcome (Range, read-only Txn, MemberList,
// Status, LeaseTimeToLive, the Watch and LeaseKeepAlive streams, ...) are
// retried with backoff when gRPC answers codes.Unavailable. Mutations (Put,
// DeleteRange, Txn with writes, LeaseGrant, Compact, ...) are retried only
// when the request provably never left the client: gRPC failed to pick a
// connection because dialing the endpoint failed. Retries are bounded by
// Config.MaxRetries and by the caller's context; nothing retries forever
// unless the caller asks for it.
//
// Unlike etcd's client, a Client checks its endpoints' health by default
// (Config.HealthCheckInterval, every second): each endpoint's Status says
// whether it is a voter that knows a leader and keeps up with the cluster,
// and only such endpoints get requests. A member that is paused, or cut off
// from the quorum while still answering pings, costs the requests already
// in flight to it instead of every request sent its way until it returns.
// A negative HealthCheckInterval turns the checks off.
//
// Watches resume after a reconnect from the revision after the last one they
// delivered, so events are neither lost nor repeated. Lease keep-alives
// reopen their stream likewise until the lease expires.
//
// With Config.Username and Password the client authenticates when it is
// made and sends the token as the "token" gRPC metadata of every request
// and stream. When the server refuses the token (expired, invalidated by a
// password change, or issued before the users and roles last changed) the
// client authenticates again, once, and repeats the request; requests that
// fail together share one new token. A token from elsewhere (Config.Token,
// a JWT) is sent as it is and never replaced.
//
// Errors that the server sent are returned as go.etcd.io/etcd/api/v3's
// rpctypes errors (compare them with errors.Is against rpctypes.ErrCompacted
// and friends); a canceled or expired context is returned as ctx.Err().
//
// The API mirrors clientv3's names (Get, Put, Delete, Txn, WithPrefix, ...)
// so that code written for clientv3 reads familiar, but the package does not
// depend on it.
package client
