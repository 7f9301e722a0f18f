package raftnode

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// newVoterOfTwo starts member 1 of {1, 2} from a snapshot, so it has no
// conf change left to apply and may campaign at once.
func newVoterOfTwo(t *testing.T, log raftnodeLog) *Node {
	t.Helper()
	ms := raft.NewMemoryStorage()
	snap := &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(1), Term: proto.Uint64(1),
		ConfState: &raftpb.ConfState{Voters: []uint64{1, 2}}}}
	if err := ms.ApplySnapshot(snap); err != nil {
		t.Fatal(err)
	}
	rn, err := raft.NewRawNode(&raft.Config{
		ID: 1, ElectionTick: 1000, HeartbeatTick: 1, Storage: ms,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, Logger: &raft.DefaultLogger{Logger: nopStdLogger()},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := New(Config{ID: 1, Logger: zap.NewNop(), RawNode: rn, MemStorage: ms, Persister: log, Transport: log, TickInterval: time.Hour})
	n.Start()
	t.Cleanup(n.Stop)
	return n
}

// TestForwardedProposalWaitsOutALeadershipTransfer: raft drops every
// proposal while its leader hands over, silently for one a follower
// forwarded; the member holds it instead and, once the other member
// leads, forwards it there.
func TestForwardedProposalWaitsOutALeadershipTransfer(t *testing.T) {
	log := &eventLog{}
	n := newVoterOfTwo(t, log)
	if err := n.Campaign(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the vote request", func() bool { return slices.Contains(log.snapshot(), "send "+raftpb.MsgVote.String()) })
	st, _ := n.Status()
	vote := &raftpb.Message{Type: raftpb.MsgVoteResp.Enum(), From: proto.Uint64(2), To: proto.Uint64(1), Term: proto.Uint64(st.HardState.GetTerm())}
	if err := n.Step(context.Background(), vote); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "leadership", func() bool { return n.Leader() == 1 })
	if err := n.TransferLeadership(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the transfer to start", func() bool { st, _ := n.Status(); return st.LeadTransferee == 2 })

	before, _ := n.Status()
	prop := &raftpb.Message{Type: raftpb.MsgProp.Enum(), From: proto.Uint64(2), To: proto.Uint64(1), Term: proto.Uint64(0),
		Entries: []*raftpb.Entry{{Data: []byte("forwarded during the transfer")}}}
	if err := n.Step(context.Background(), prop); err != nil {
		t.Fatal(err)
	}
	// The loop has stepped its inbox once Status (run by the loop) answers:
	// the proposal must be neither appended nor lost.
	if st, _ := n.Status(); st.Progress[1].Match != before.Progress[1].Match {
		t.Fatalf("proposal appended during the transfer (match %d -> %d)", before.Progress[1].Match, st.Progress[1].Match)
	}

	// Member 2 takes over at a higher term: the held proposal goes to it.
	sent := len(log.snapshot())
	hb := &raftpb.Message{Type: raftpb.MsgHeartbeat.Enum(), From: proto.Uint64(2), To: proto.Uint64(1), Term: proto.Uint64(before.HardState.GetTerm() + 1)}
	if err := n.Step(context.Background(), hb); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "member 2 to lead", func() bool { return n.Leader() == 2 })
	waitFor(t, "the held proposal to be forwarded", func() bool {
		return slices.Contains(log.snapshot()[sent:], "send "+raftpb.MsgProp.String())
	})
}
