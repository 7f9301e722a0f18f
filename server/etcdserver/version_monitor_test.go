package etcdserver

import "testing"

func TestDecideClusterVersion(t *testing.T) {
	enabled := func(target string) downgradeInfo { return downgradeInfo{Enabled: true, TargetVersion: target} }
	tests := []struct {
		name    string
		st      versionState
		want    string
		wantErr bool
	}{
		{name: "first decision, versions known", st: versionState{servers: map[uint64]string{1: "3.7.1", 2: "3.7.3"}}, want: "3.7.0"},
		{name: "first decision, lowest wins", st: versionState{servers: map[uint64]string{1: "3.7.1", 2: "3.6.9"}}, want: "3.6.0"},
		{name: "first decision, one unknown", st: versionState{servers: map[uint64]string{1: "3.7.1", 2: ""}}, want: "3.0.0"},
		{name: "unknown member leaves it", st: versionState{cluster: "3.0.0", servers: map[uint64]string{1: "3.7.1", 2: ""}}, want: ""},
		{name: "unparsable member leaves it", st: versionState{cluster: "3.0.0", servers: map[uint64]string{1: "3.7.1", 2: "x"}}, want: ""},
		{name: "moves up to the members", st: versionState{cluster: "3.0.0", servers: map[uint64]string{1: "3.7.1", 2: "3.7.0"}}, want: "3.7.0"},
		{name: "up to date", st: versionState{cluster: "3.7.0", servers: map[uint64]string{1: "3.7.1"}}, want: ""},
		{name: "never down without downgrade", st: versionState{cluster: "3.7.0", servers: map[uint64]string{1: "3.6.1"}}, want: ""},
		{name: "never across majors", st: versionState{cluster: "3.7.0", servers: map[uint64]string{1: "4.0.0"}}, want: ""},
		{name: "downgrade lowers", st: versionState{cluster: "3.7.0", downgrade: enabled("3.6.0"), servers: map[uint64]string{1: "3.7.1", 2: "3.7.3"}}, want: "3.6.0"},
		// As etcd: the cluster version must be lowered before any member
		// runs the target (such a member cannot even start before).
		{name: "downgrade with a member at target", st: versionState{cluster: "3.7.0", downgrade: enabled("3.6.0"), servers: map[uint64]string{1: "3.7.1", 2: "3.6.4"}}, wantErr: true},
		{name: "downgrade reached", st: versionState{cluster: "3.6.0", downgrade: enabled("3.6.0"), servers: map[uint64]string{1: "3.7.1"}}, want: ""},
		{name: "downgrade two minors", st: versionState{cluster: "3.7.0", downgrade: enabled("3.5.0"), servers: map[uint64]string{1: "3.7.1"}}, wantErr: true},
		{name: "downgrade below a member", st: versionState{cluster: "3.7.0", downgrade: enabled("3.6.0"), servers: map[uint64]string{1: "3.8.0"}}, wantErr: true},
		{name: "downgrade waits for unknown member", st: versionState{cluster: "3.7.0", downgrade: enabled("3.6.0"), servers: map[uint64]string{1: "3.7.1", 2: ""}}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decideClusterVersion(tt.st)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("decideClusterVersion = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestDowngradeFinished(t *testing.T) {
	on := downgradeInfo{Enabled: true, TargetVersion: "3.6.0"}
	tests := []struct {
		name string
		st   versionState
		want bool
	}{
		{"all at target", versionState{downgrade: on, servers: map[uint64]string{1: "3.6.2", 2: "3.6.0"}}, true},
		{"one still newer", versionState{downgrade: on, servers: map[uint64]string{1: "3.6.2", 2: "3.7.1"}}, false},
		{"one unknown", versionState{downgrade: on, servers: map[uint64]string{1: "3.6.2", 2: ""}}, false},
		{"no downgrade", versionState{servers: map[uint64]string{1: "3.6.2"}}, false},
	}
	for _, tt := range tests {
		if got := downgradeFinished(tt.st); got != tt.want {
			t.Errorf("%s: downgradeFinished = %v, want %v", tt.name, got, tt.want)
		}
	}
}
