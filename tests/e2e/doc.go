// Package e2e holds end-to-end tests: they build the real cairn binary, start
// it as a separate process on free ports and a temporary data dir, and drive
// it with the official etcd Go client (go.etcd.io/etcd/client/v3), asserting
// etcd v3.7's observable behaviour.
package e2e
