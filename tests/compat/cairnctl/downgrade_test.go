package cairnctl

import "testing"

func TestDowngrade(t *testing.T) {
	tw := twins{startTwins(t)}
	tw.checkAll(t, cat(
		formats(step{args: []string{"downgrade", "cancel"}, want: "3.7"}, "simple", "json", "protobuf"),
		formats(step{args: []string{"downgrade", "validate", "3.6"}, want: "3.7"}, "simple", "json", "protobuf"),
		formats(step{args: []string{"downgrade", "cancel"}, want: "not supported as output format"}, "fields", "table"),
		[]step{
			{args: []string{"downgrade", "validate"}, want: "TARGET_VERSION not provided"},
			{args: []string{"downgrade", "enable", "3.6", "3.5"}, want: "too many arguments"},
			{args: []string{"downgrade", "validate", ""}, want: "target version not provided"},
			{args: []string{"downgrade", "validate", "3.5"}, want: "invalid downgrade target version"},
			{args: []string{"downgrade", "validate", "x.y"}, want: "wrong downgrade target version format"},
			{args: []string{"downgrade", "enable", "3.6"}, want: "Downgrade enable success, cluster version 3.7"},
			{args: []string{"downgrade", "enable", "3.6"}, want: "downgrade job in progress"},
			{args: []string{"downgrade", "cancel", "-w", "json"}, want: `"version":"3.7"`},
		},
	))
}
