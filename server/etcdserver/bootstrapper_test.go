package etcdserver

import (
	"testing"

	"go.uber.org/zap"
)

// A new member's raft state is created once and found again on restart,
// with the same identity, without a member being started.
func TestBootstrapperCreatesThenRestartsRaft(t *testing.T) {
	cfg, err := testConfig(t.TempDir()).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	bs := bootstrapper{cfg: cfg, lg: zap.NewNop()}
	first, err := bs.bootstrapRaft()
	if err != nil {
		t.Fatal(err)
	}
	first.storage.Close()
	if first.id == 0 || first.clusterID == 0 || len(first.peers) != 1 {
		t.Fatalf("new member: id %x, cluster %x, peers %v; want IDs and its one peer", first.id, first.clusterID, first.peers)
	}
	if !cfg.HasWAL() {
		t.Fatal("no WAL after bootstrapping a new member")
	}
	again, err := bs.bootstrapRaft()
	if err != nil {
		t.Fatal(err)
	}
	again.storage.Close()
	if again.id != first.id || again.clusterID != first.clusterID {
		t.Fatalf("restart: id %x cluster %x, want %x %x", again.id, again.clusterID, first.id, first.clusterID)
	}
}
