// Package deploy holds the tests of cairn's deployment assets: the
// Kubernetes manifests (kubernetes/), the systemd unit (systemd/), the
// Prometheus rules and Grafana dashboard (monitoring/), and the license
// files at the repository root.
//
// It is a module of its own so that what the tests need (k8s.io/api,
// Prometheus' rule parser) never enters the dependency graph of cairn's
// users: nothing imports this package, and scripts/test.sh runs its tests.
package deploy
