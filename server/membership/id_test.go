package membership

import (
	"testing"
	"time"
)

// The IDs a default etcd v3 member reports (etcd --name default, no flags).
func TestIDsMatchEtcdDefaults(t *testing.T) {
	id := ComputeMemberID([]string{"http://localhost:2380"}, "etcd-cluster", nil)
	if id != 0x8e9e05c52164694d {
		t.Fatalf("member id = %x, want 8e9e05c52164694d", id)
	}
	if cid := ComputeClusterID([]uint64{id}); cid != 0xcdf818194e3a8c32 {
		t.Fatalf("cluster id = %x, want cdf818194e3a8c32", cid)
	}
}

func TestMemberIDOrderIndependentAndTimeSensitive(t *testing.T) {
	a := ComputeMemberID([]string{"http://b:2380", "http://a:2380"}, "tok", nil)
	b := ComputeMemberID([]string{"http://a:2380", "http://b:2380"}, "tok", nil)
	if a != b {
		t.Fatal("peer URL order must not matter")
	}
	now := time.Unix(1700000000, 0)
	if ComputeMemberID([]string{"http://a:2380"}, "tok", &now) == ComputeMemberID([]string{"http://a:2380"}, "tok", nil) {
		t.Fatal("time must change the id")
	}
}
