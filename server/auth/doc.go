// Package auth owns etcd v3's authentication and authorization state: users,
// roles and their key permissions, the auth-enabled flag and the auth
// revision, all persisted in the backend's auth buckets in etcd v3.7's
// encoding (authUsers: user name -> marshaled authpb.User; authRoles: role
// name -> marshaled authpb.Role; auth: "authEnabled" -> one byte 1 or 0,
// "authRevision" -> 8 bytes big endian). It also owns the tokens that tell
// the API layer who sends a request: simple tokens and JWTs.
//
// # Who calls what
//
// The Store serves three callers.
//
// The apply step calls the state-changing operations (AuthEnable,
// AuthDisable, UserAdd, UserDelete, UserChangePassword, UserGrantRole,
// UserRevokeRole, RoleAdd, RoleDelete, RoleGrantPermission,
// RoleRevokePermission, Authenticate) and the reads that go through raft
// (AuthStatus, UserGet, UserList, RoleGet, RoleList), in log order, from one
// goroutine. Each takes the backend's batch lock itself, so the caller must
// not hold it; each writes through the batch and never commits: the member
// commits with the consistent index. Given the same prior state and request
// they write the same bytes on every member, with one exception inherited
// from etcd: a UserAdd or UserChangePassword entry that carries a plain
// password (written by etcd before v3.5) is hashed at apply time, with a
// random salt. Every successful change bumps the auth revision exactly where
// etcd does (AuthEnable does not; a duplicate UserGrantRole does not).
//
// The apply step also checks every request's permissions (IsRangePermitted,
// IsPutPermitted, IsDeleteRangePermitted, IsAdminPermitted) against the
// AuthInfo the API layer put in the request header. A header whose auth
// revision is older than the store's fails with ErrAuthOldRevision: the user's
// rights may have changed since the token was issued. The checks read an
// interval cache (per user: merged read and write ranges, and whether the
// user has the root role) that every change rebuilds before it returns.
//
// The API layer calls the rest, concurrently with the apply step:
// CheckPassword (bcrypt is far too slow for the apply step) returns the auth
// revision it checked against, and the caller retries if the revision moved
// before its Authenticate entry was applied; GenerateHash, HashUserAdd and
// HashChangePassword hash passwords before a request is proposed, so the
// log never holds one in plain text; AuthInfoFromToken resolves a token;
// GenTokenPrefix makes the random half of a simple token.
//
// # Tokens
//
// A TokenProvider issues and resolves tokens. NewTokenProvider parses
// etcd's --auth-token option: "simple" gives stateful tokens
// "<16 random letters>.<raft index>", kept in memory for a TTL that each use
// extends; "jwt,..." gives signed, stateless JWTs that carry the user name
// and the auth revision, and accepts any JWT signed with the configured key,
// including ones no Authenticate call produced. Time comes from an injected
// Clock; expired simple tokens are dropped lazily, so no goroutine runs.
//
// # Errors
//
// The Err* sentinels carry etcd's texts; GRPCErrors maps them to the gRPC
// statuses etcd answers with. ErrNoPasswordUser is missing from that table
// in etcd too and reaches clients as codes.Unknown with its text.
package auth
