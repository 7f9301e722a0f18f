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

// TestProposalsWaitForTheNewLeaderAfterATransfer: the hand-over ends when
// the transferee's campaign reaches the old leader, which steps down
// knowing no leader yet. Proposals held during the transfer, local and
// forwarded, must wait for the new leader then instead of being dropped
// by raft (locally "raft proposal dropped", silently when forwarded).
func TestProposalsWaitForTheNewLeaderAfterATransfer(t *testing.T) {
	log := &eventLog{}
	n := newVoterOfTwo(t, log)
	if err := n.Campaign(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the vote request", func() bool { return slices.Contains(log.snapshot(), "send "+raftpb.MsgVote.String()) })
	st, _ := n.Status()
	term := st.HardState.GetTerm()
	step := func(m *raftpb.Message) {
		t.Helper()
		if err := n.Step(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	step(&raftpb.Message{Type: raftpb.MsgVoteResp.Enum(), From: proto.Uint64(2), To: proto.Uint64(1), Term: proto.Uint64(term)})
	waitFor(t, "leadership", func() bool { return n.Leader() == 1 })
	if err := n.TransferLeadership(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the transfer to start", func() bool { st, _ := n.Status(); return st.LeadTransferee == 2 })

	dropped := make(chan error, 1)
	n.Propose(context.Background(), time.Now().Add(time.Minute), []byte("local"), func(err error) { dropped <- err })
	step(&raftpb.Message{Type: raftpb.MsgProp.Enum(), From: proto.Uint64(2), To: proto.Uint64(1),
		Entries: []*raftpb.Entry{{Data: []byte("forwarded")}}})
	n.Status() // the loop has queued both

	// Member 2 campaigns at a higher term: member 1 steps down, no leader.
	sent := len(log.snapshot())
	step(&raftpb.Message{Type: raftpb.MsgVote.Enum(), From: proto.Uint64(2), To: proto.Uint64(1), Term: proto.Uint64(term + 1),
		LogTerm: proto.Uint64(term), Index: proto.Uint64(st.HardState.GetCommit() + 10)})
	waitFor(t, "member 1 to step down", func() bool { st, _ := n.Status(); return st.RaftState == raft.StateFollower })
	select {
	case err := <-dropped:
		t.Fatalf("local proposal dropped while no leader was known: %v", err)
	default:
	}
	if st, _ := n.Status(); st.Lead != 0 {
		t.Fatalf("member 1 follows %x before member 2 won", st.Lead)
	}

	// Member 2 wins: both proposals go to it.
	step(&raftpb.Message{Type: raftpb.MsgHeartbeat.Enum(), From: proto.Uint64(2), To: proto.Uint64(1), Term: proto.Uint64(term + 1)})
	waitFor(t, "both proposals forwarded to member 2", func() bool {
		props := 0
		for _, e := range log.snapshot()[sent:] {
			if e == "send "+raftpb.MsgProp.String() {
				props++
			}
		}
		return props == 2
	})
	select {
	case err := <-dropped:
		t.Fatalf("local proposal dropped: %v", err)
	default:
	}
}
