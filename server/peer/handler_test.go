package peer

import (
	"encoding/json"
	"net/http"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// peerHeaders are the headers member from of cluster cid sends.
func peerHeaders(from, to, cid uint64, server, minCluster string) http.Header {
	h := http.Header{}
	h.Set(hdrFrom, idString(from))
	h.Set(hdrTo, idString(to))
	h.Set(hdrClusterID, idString(cid))
	if server != "" {
		h.Set(hdrServerVersion, server)
		h.Set(hdrMinClusterVersion, minCluster)
	}
	return h
}

func TestHandlerRefusals(t *testing.T) {
	m := newMember(t, 1, clusterID)
	m.tr.AddPeer(2, []string{"http://127.0.0.1:1"}) // known, never reachable
	m.tr.AddPeer(3, []string{"http://127.0.0.1:1"})
	m.rec.setRemoved(3)
	good := peerHeaders(2, 1, clusterID, "3.7.3", "3.0.0")
	hb, _ := proto.Marshal(msg(raftpb.MsgHeartbeat, 2, 1, 1, 0))
	fromRemoved, _ := proto.Marshal(msg(raftpb.MsgHeartbeat, 3, 1, 1, 0))
	notSnap, _ := marshalWithLength(msg(raftpb.MsgHeartbeat, 2, 1, 1, 0))

	tests := []struct {
		name, method, path string
		hdr                http.Header
		body               []byte
		wantStatus         int
		wantBody           string
	}{
		{"stream other cluster", "GET", "/raft/stream/message/2", peerHeaders(2, 1, 7, "3.7.3", "3.0.0"), nil, 412, "cluster ID mismatch\n"},
		{"pipeline other cluster", "POST", "/raft", peerHeaders(2, 1, 7, "3.7.3", "3.0.0"), hb, 412, "cluster ID mismatch\n"},
		{"snapshot other cluster", "POST", "/raft/snapshot", peerHeaders(2, 1, 7, "3.7.3", "3.0.0"), nil, 412, "cluster ID mismatch\n"},
		{"no versions (v2 member)", "GET", "/raft/stream/message/2", peerHeaders(2, 1, clusterID, "", ""), nil, 412, "incompatible version\n"},
		{"remote too old", "POST", "/raft", peerHeaders(2, 1, clusterID, "2.3.0", "2.0.0"), hb, 412, "incompatible version\n"},
		{"local too old", "POST", "/raft", peerHeaders(2, 1, clusterID, "3.9.0", "3.8.0"), hb, 412, "incompatible version\n"},
		{"malformed version", "POST", "/raft", peerHeaders(2, 1, clusterID, "three", "3.0.0"), hb, 412, "incompatible version\n"},
		{"stream removed member", "GET", "/raft/stream/msgapp/3", peerHeaders(3, 1, clusterID, "3.7.3", "3.0.0"), nil, 410, "removed member\n"},
		{"pipeline removed member", "POST", "/raft", peerHeaders(3, 1, clusterID, "3.7.3", "3.0.0"), fromRemoved, 403, "{\"message\":\"cannot process message from removed member\"}\n"},
		{"stream unknown member", "GET", "/raft/stream/message/9", peerHeaders(9, 1, clusterID, "3.7.3", "3.0.0"), nil, 404, "error sender not found\n"},
		{"stream bad from", "GET", "/raft/stream/message/xyz", good, nil, 404, "invalid from\n"},
		{"stream bad type", "GET", "/raft/stream/msgappv2/2", good, nil, 404, "invalid path\n"},
		{"stream for another member", "GET", "/raft/stream/message/2", peerHeaders(2, 5, clusterID, "3.7.3", "3.0.0"), nil, 412, "to field mismatch\n"},
		{"stream by POST", "POST", "/raft/stream/message/2", good, nil, 405, "Method Not Allowed\n"},
		{"pipeline by GET", "GET", "/raft", good, nil, 405, "Method Not Allowed\n"},
		{"pipeline garbage", "POST", "/raft", good, []byte{0xff, 0xff}, 400, "error unmarshalling raft message\n"},
		{"snapshot not MsgSnap", "POST", "/raft/snapshot", good, notSnap, 400, "wrong raft message type\n"},
		{"unknown path", "GET", "/members", good, nil, 404, "404 page not found\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, hdr := doRequest(t, m.url+tt.path, tt.method, tt.hdr, tt.body)
			if status != tt.wantStatus || body != tt.wantBody {
				t.Fatalf("got %d %q, want %d %q", status, body, tt.wantStatus, tt.wantBody)
			}
			if tt.wantStatus == 412 && hdr.Get(hdrClusterID) != idString(clusterID) {
				t.Fatalf("412 without our cluster ID: %q", hdr.Get(hdrClusterID))
			}
		})
	}
	if n := len(m.rec.received()); n != 0 {
		t.Fatalf("%d refused messages were processed", n)
	}
}

func TestHandlerAcceptsPipelineMessage(t *testing.T) {
	m := newMember(t, 1, clusterID)
	want := msg(raftpb.MsgVote, 2, 1, 4, 9)
	b, _ := proto.Marshal(want)
	status, body, _ := doRequest(t, m.url+"/raft", "POST", peerHeaders(2, 1, clusterID, "3.7.3", "3.0.0"), b)
	if status != http.StatusNoContent || body != "" {
		t.Fatalf("got %d %q", status, body)
	}
	assertSameMessages(t, "pipeline", m.rec.received(), []*raftpb.Message{want})
}

func TestProbing(t *testing.T) {
	m := newMember(t, 1, clusterID)
	status, body, _ := doRequest(t, m.url+"/raft/probing", "GET", http.Header{}, nil)
	var health struct{ OK bool }
	if err := json.Unmarshal([]byte(body), &health); err != nil || status != 200 || !health.OK {
		t.Fatalf("got %d %q (%v)", status, body, err)
	}
}
