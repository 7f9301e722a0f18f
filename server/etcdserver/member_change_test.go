package etcdserver

import (
	"reflect"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairnkv/cairn/server/membership"
)

// TestPromotionKeepsTheMember applies the promotions a member may find in
// its log: etcd's (only the ID and isPromote), cairn's own (the whole member
// and isPromote) and cairn's older form (the whole member alone). Each
// leaves the learner's peer URLs, name and client URLs as they were.
func TestPromotionKeepsTheMember(t *testing.T) {
	s := startServer(t, testConfig(t.TempDir()))
	learner := `{"id":153,"peerURLs":["http://127.0.0.1:1"],"isLearner":true}`
	tests := map[string]string{
		"etcd":        `{"id":153,"peerURLs":null,"isPromote":true}`,
		"cairn":       `{"id":153,"peerURLs":["http://127.0.0.1:1"],"isPromote":true}`,
		"cairn older": `{"id":153,"peerURLs":["http://127.0.0.1:1"]}`,
	}
	for name, promotion := range tests {
		tx := s.stores.be.BatchTx()
		tx.Lock()
		add := raftpb.ConfChangeAddLearnerNode
		s.applyMemberChange(tx, &raftpb.ConfChange{Type: &add, Context: []byte(learner)})
		published := &membership.Member{ID: 153, PeerURLs: []string{"http://127.0.0.1:1"}, IsLearner: true,
			Name: "l", ClientURLs: []string{"http://127.0.0.1:2"}}
		if err := membership.Save(tx, published); err != nil {
			t.Fatal(err)
		}
		promote := raftpb.ConfChangeAddNode
		s.applyMemberChange(tx, &raftpb.ConfChange{Type: &promote, Context: []byte(promotion)})
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
