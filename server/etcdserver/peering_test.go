package etcdserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// fakeRaftNode records what the peer side hands to raft.
type fakeRaftNode struct{ calls []string }

func (n *fakeRaftNode) Step(context.Context, *raftpb.Message) error {
	n.calls = append(n.calls, "step")
	return nil
}
func (n *fakeRaftNode) ReportUnreachable(uint64) { n.calls = append(n.calls, "unreachable") }
func (n *fakeRaftNode) ReportSnapshot(uint64, raft.SnapshotStatus) {
	n.calls = append(n.calls, "snapshot")
}

// raftPeer hands messages and reports to raft, asks the members buckets
// about removed members, and sends a copy of the backend taken under the
// apply lock.
func TestRaftPeer(t *testing.T) {
	node := &fakeRaftNode{}
	be := testBackend(t)
	locked := 0
	p := &raftPeer{node: node, removed: func(id uint64) bool { return id == 2 },
		withApplyLock: func(f func(backend.Backend)) { locked++; f(be) }}
	_ = p.Process(context.Background(), &raftpb.Message{})
	p.ReportUnreachable(2)
	p.ReportSnapshot(2, raft.SnapshotFinish)
	if want := []string{"step", "unreachable", "snapshot"}; !slices.Equal(node.calls, want) {
		t.Errorf("raft saw %v, want %v", node.calls, want)
	}
	if !p.IsIDRemoved(2) || p.IsIDRemoved(3) {
		t.Error("IsIDRemoved: want 2 removed, 3 not")
	}
	rc, size, err := p.OpenSnapshot(&raftpb.Message{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || int64(len(db)) != size || size == 0 || locked != 1 {
		t.Errorf("snapshot of %d bytes (announced %d, err %v) under %d apply locks; want one whole copy under one", len(db), size, err, locked)
	}
}

// /members answers GET only, with the cluster ID and a JSON list (empty,
// not null, when the stores are closed).
func TestMembersHandler(t *testing.T) {
	members := []*membership.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a:1"}}}
	h := membersHandler{clusterID: 0xc1, members: func() []*membership.Member { return members }, lg: zap.NewNop()}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/members", nil))
	var got []*membership.Member
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || len(got) != 1 || got[0].ID != 1 {
		t.Errorf("GET /members: %s (%v)", rec.Body, err)
	}
	if id := rec.Header().Get("X-Etcd-Cluster-ID"); id != "c1" {
		t.Errorf("cluster ID header %q, want c1", id)
	}
	members = nil
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/members", nil))
	if body := rec.Body.String(); body != "[]\n" {
		t.Errorf("no members: %q, want []", body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/members", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != http.MethodGet {
		t.Errorf("POST /members: %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
}
