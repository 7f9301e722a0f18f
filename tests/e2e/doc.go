// Package e2e holds end-to-end tests: they build the real cairn binary, start
// it as a separate process on free ports and a temporary data dir, and drive
// it with the official etcd Go client (go.etcd.io/etcd/client/v3), asserting
// etcd v3.7's observable behaviour. Building, ports, processes and logs come
// from tests/harness; member_test.go and cluster_harness_test.go add what
// these tests configure (members, clusters behind proxies, leaders).
package e2e
