package etcdserver

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// fakePeers records what memberRecords tells the transport.
type fakePeers struct{ calls []string }

func (f *fakePeers) AddPeer(id uint64, _ []string)    { f.calls = append(f.calls, "add "+idHex(id)) }
func (f *fakePeers) UpdatePeer(id uint64, _ []string) { f.calls = append(f.calls, "update "+idHex(id)) }
func (f *fakePeers) RemovePeer(id uint64)             { f.calls = append(f.calls, "remove "+idHex(id)) }

// testBackend is a fresh backend of its own, no member around it.
func testBackend(t *testing.T) backend.Backend {
	t.Helper()
	be, err := backend.Open(backend.Config{Path: filepath.Join(t.TempDir(), "db"), UnsafeNoFsync: true, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// TestPromotionKeepsTheMember applies the promotions a member may find in
// its log: etcd's (only the ID and isPromote), cairn's own (the whole member
// and isPromote) and cairn's older form (the whole member alone). Each
// leaves the learner's peer URLs, name and client URLs as they were.
func TestPromotionKeepsTheMember(t *testing.T) {
	be := testBackend(t)
	records := memberRecords{self: 1, peers: &fakePeers{}, lg: zap.NewNop()}
	learner := `{"id":153,"peerURLs":["http://127.0.0.1:1"],"isLearner":true}`
	tests := map[string]string{
		"etcd":        `{"id":153,"peerURLs":null,"isPromote":true}`,
		"cairn":       `{"id":153,"peerURLs":["http://127.0.0.1:1"],"isPromote":true}`,
		"cairn older": `{"id":153,"peerURLs":["http://127.0.0.1:1"]}`,
	}
	for name, promotion := range tests {
		tx := be.BatchTx()
		tx.Lock()
		add := raftpb.ConfChangeAddLearnerNode
		records.applyChange(tx, &raftpb.ConfChange{Type: &add, Context: []byte(learner)})
		published := &membership.Member{ID: 153, PeerURLs: []string{"http://127.0.0.1:1"}, IsLearner: true,
			Name: "l", ClientURLs: []string{"http://127.0.0.1:2"}}
		if err := membership.Save(tx, published); err != nil {
			t.Fatal(err)
		}
		promote := raftpb.ConfChangeAddNode
		records.applyChange(tx, &raftpb.ConfChange{Type: &promote, Context: []byte(promotion)})
		got := findIn(tx, 153)
		membership.Remove(tx, 153)
		tx.Unlock()
		want := *published
		want.IsLearner = false
		if got == nil || !reflect.DeepEqual(*got, want) {
			t.Errorf("%s promotion: member %+v, want %+v", name, got, want)
		}
	}
}

// memberRecords connects to an added member, reconnects to an updated one
// and disconnects from a removed one, but never from itself; the changes
// land in the members bucket.
func TestMemberRecordsApplyChange(t *testing.T) {
	be := testBackend(t)
	peers := &fakePeers{}
	records := memberRecords{self: 1, peers: peers, lg: zap.NewNop()}
	add, update, remove := raftpb.ConfChangeAddNode, raftpb.ConfChangeUpdateNode, raftpb.ConfChangeRemoveNode
	two, self := uint64(2), uint64(1)
	changes := []*raftpb.ConfChange{
		{Type: &add, Context: []byte(`{"id":1,"peerURLs":["http://127.0.0.1:1"]}`)},
		{Type: &add, Context: []byte(`{"id":2,"peerURLs":["http://127.0.0.1:2"]}`)},
		{Type: &update, Context: []byte(`{"id":2,"peerURLs":["http://127.0.0.1:3"]}`)},
		{Type: &remove, NodeId: &two},
		{Type: &remove, NodeId: &self},
	}
	for _, cc := range changes {
		tx := be.BatchTx()
		tx.Lock()
		connect := records.applyChange(tx, cc)
		tx.Unlock()
		connect()
	}
	if want := []string{"add 1", "add 2", "update 2", "remove 2"}; !slices.Equal(peers.calls, want) {
		t.Errorf("transport calls %v, want %v", peers.calls, want)
	}
	tx := be.ReadTx()
	tx.RLock()
	members, _ := membership.Load(tx)
	tx.RUnlock()
	if len(members) != 0 {
		t.Errorf("members after removing both: %v", members)
	}
}

// The snapshot payload lists the members and the cluster version as etcd's
// v2 store JSON.
func TestMembershipSnapshot(t *testing.T) {
	be := testBackend(t)
	tx := be.BatchTx()
	tx.Lock()
	if err := membership.Save(tx, &membership.Member{ID: 0xa, PeerURLs: []string{"http://127.0.0.1:1"}, Name: "n", ClientURLs: []string{"http://127.0.0.1:2"}}); err != nil {
		t.Fatal(err)
	}
	tx.Unlock()
	payload, err := membershipSnapshot(be, func() string { return "3.7.0" })
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`/0/members/a/attributes`, `/0/version`, `3.7.0`, `http://127.0.0.1:1`} {
		if !strings.Contains(string(payload), want) {
			t.Errorf("payload %s lacks %q", payload, want)
		}
	}
}
