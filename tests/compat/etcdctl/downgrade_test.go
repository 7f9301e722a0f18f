package etcdctl

import "testing"

// TestDowngrade compares etcdctl downgrade validate/enable/cancel, their
// errors, and the downgrade state endpoint status reports. The steps run
// back to back: etcd's leader lowers the cluster version to the target a
// few seconds after enable, which cairn does not model (see docs).
func TestDowngrade(t *testing.T) {
	p := startPair(t)
	p.checkAll(t, []step{
		{name: "cancel with none", args: []string{"downgrade", "cancel"}, want: "Downgrade cancel success, cluster version 3.7"},
		{name: "validate 3.6", args: []string{"downgrade", "validate", "3.6"}, want: "Downgrade validate success, cluster version 3.7"},
		{name: "validate 3.6.1", args: []string{"downgrade", "validate", "3.6.1"}, want: "Downgrade validate success, cluster version 3.7"},
		{name: "validate 3.5", args: []string{"downgrade", "validate", "3.5"}, want: "invalid downgrade target version", wantExit: 1},
		{name: "validate 3.7", args: []string{"downgrade", "validate", "3.7"}, want: "invalid downgrade target version", wantExit: 1},
		{name: "validate junk", args: []string{"downgrade", "validate", "x.y"}, want: "wrong downgrade target version format", wantExit: 1},
		{name: "enable 3.6", args: []string{"downgrade", "enable", "3.6"}, want: "Downgrade enable success, cluster version 3.7"},
		{name: "status enabled", args: []string{"endpoint", "status", "-w", "table"}, want: "3.6.0"},
		{name: "validate in progress", args: []string{"downgrade", "validate", "3.6"}, want: "downgrade job in progress", wantExit: 1},
		{name: "enable in progress", args: []string{"downgrade", "enable", "3.6"}, want: "downgrade job in progress", wantExit: 1},
		{name: "cancel", args: []string{"downgrade", "cancel"}, want: "Downgrade cancel success"},
		{name: "status cancelled", args: []string{"endpoint", "status", "-w", "json"}},
	})
}
