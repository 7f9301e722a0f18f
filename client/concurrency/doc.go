// Package concurrency owns cairn's client-side coordination recipes, built
// only on the public API of package client: sessions (a lease kept alive for
// as long as a process lives), mutexes, leader elections and software
// transactional memory (STM).
//
// The recipes lay their keys out exactly as etcd's clientv3/concurrency
// does: a waiter or candidate of the lock or election named pfx owns the key
// pfx + "/" + its lease ID in lowercase hex, attached to that lease, and the
// owner is the waiter whose key has the lowest create revision. Programs
// using etcd's recipes and programs using these therefore exclude each other
// on the same names, and the server's Lock and Election services (built on
// this package) interoperate with both.
//
// Every wait is a watch from a known revision, so no deletion is missed,
// and every wait ends when its context does.
package concurrency
