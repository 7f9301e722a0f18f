package raftnode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// gatedLog is an eventLog whose first Save of a HardState at holdTerm is
// held until the test releases it, so the loop is caught in the middle of
// a persist the way an fsync holds it. Which save is held does not depend
// on timing: the bootstrap's saves are at an earlier term.
type gatedLog struct {
	eventLog
	holdTerm uint64        // the term whose first save is held
	hold     chan struct{} // closed by the test to release the held save
	holding  chan struct{} // capacity 1: receives once the save is held
	held     bool          // only the raft loop (Save) uses it
}

func newGatedLog(term uint64) *gatedLog {
	return &gatedLog{holdTerm: term, hold: make(chan struct{}), holding: make(chan struct{}, 1)}
}

func (l *gatedLog) Save(st *raftpb.HardState, ents []*raftpb.Entry) error {
	if raft.IsEmptyHardState(st) && len(ents) == 0 {
		return nil
	}
	if !l.held && st.GetTerm() == l.holdTerm {
		l.held = true
		l.holding <- struct{}{}
		<-l.hold
	}
	l.add(fmt.Sprintf("save %d entries", len(ents)))
	return nil
}

// newFollower starts member 1 of {1, 2}, which has not heard of a leader.
func newFollower(t *testing.T, log raftnodeLog) *Node {
	t.Helper()
	ms := raft.NewMemoryStorage()
	rn, err := raft.NewRawNode(&raft.Config{
		ID: 1, ElectionTick: 1000, HeartbeatTick: 1, Storage: ms,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, Logger: &raft.DefaultLogger{Logger: nopStdLogger()},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rn.Bootstrap([]raft.Peer{{ID: 1}, {ID: 2}}); err != nil {
		t.Fatal(err)
	}
	n := New(Config{ID: 1, Logger: zap.NewNop(), RawNode: rn, MemStorage: ms, Persister: log, Transport: log, TickInterval: time.Hour})
	n.Start()
	t.Cleanup(n.Stop)
	return n
}

type raftnodeLog interface {
	Persister
	Transport
}

func fromLeader(typ raftpb.MessageType, m *raftpb.Message) *raftpb.Message {
	m.Type, m.From, m.To, m.Term = typ.Enum(), proto.Uint64(2), proto.Uint64(1), proto.Uint64(5)
	return m
}

// While the loop persists, messages from the leader and local proposals
// queue without waiting for it; the next turn steps them together. The
// forwarded proposal leaves before that turn's fsync, the append's
// acknowledgement only after it.
func TestFollowerForwardsProposalsBeforePersistingAndAcksAfter(t *testing.T) {
	log := newGatedLog(5) // the term of fromLeader's messages
	n := newFollower(t, log)

	// The heartbeat makes 2 the leader at term 5; persisting the new term
	// is held.
	if err := n.Step(context.Background(), fromLeader(raftpb.MsgHeartbeat, &raftpb.Message{})); err != nil {
		t.Fatal(err)
	}
	select {
	case <-log.holding:
	case <-time.After(10 * time.Second):
		t.Fatal("the heartbeat's term was never persisted")
	}
	app := fromLeader(raftpb.MsgApp, &raftpb.Message{Index: proto.Uint64(2), LogTerm: proto.Uint64(1),
		Entries: []*raftpb.Entry{{Index: proto.Uint64(3), Term: proto.Uint64(5), Data: []byte("from leader")}}})
	stepped := make(chan error, 1)
	go func() { stepped <- n.Step(context.Background(), app) }()
	select {
	case err := <-stepped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Step waited for the raft loop's persist")
	}
	n.Propose(context.Background(), time.Time{}, []byte("local"), func(err error) { t.Errorf("proposal dropped: %v", err) })
	close(log.hold)

	ack := "send " + raftpb.MsgAppResp.String()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(log.snapshot(), ack) {
		if time.Now().After(deadline) {
			t.Fatalf("append never acknowledged; events %v", log.snapshot())
		}
		time.Sleep(time.Millisecond)
	}
	events := log.snapshot()
	forward := slices.Index(events, "send "+raftpb.MsgProp.String())
	save := slices.Index(events, "save 1 entries")
	if forward < 0 || save < 0 || !(forward < save && save < slices.Index(events, ack)) {
		t.Errorf("events %v: want the forwarded proposal, then the save of the leader's entry, then its ack", events)
	}
}

func TestStepRefusesMessagesBeyondTheInboxLimit(t *testing.T) {
	log := newGatedLog(5) // the term of fromLeader's messages
	n := newFollower(t, log)
	if err := n.Step(context.Background(), fromLeader(raftpb.MsgHeartbeat, &raftpb.Message{})); err != nil {
		t.Fatal(err)
	}
	<-log.holding // the loop is busy and steps nothing more for now
	var err error
	for i := 0; i <= inboxLimit && err == nil; i++ {
		err = n.Step(context.Background(), fromLeader(raftpb.MsgHeartbeat, &raftpb.Message{}))
	}
	close(log.hold)
	if !errors.Is(err, ErrInboxFull) {
		t.Fatalf("after %d queued messages Step returned %v, want ErrInboxFull", inboxLimit+1, err)
	}
}

func TestSplitByDurability(t *testing.T) {
	msg := func(typ raftpb.MessageType) *raftpb.Message { return &raftpb.Message{Type: typ.Enum()} }
	types := func(ms []*raftpb.Message) []raftpb.MessageType {
		var out []raftpb.MessageType
		for _, m := range ms {
			out = append(out, m.GetType())
		}
		return out
	}
	in := []*raftpb.Message{msg(raftpb.MsgAppResp), msg(raftpb.MsgProp), msg(raftpb.MsgVoteResp),
		msg(raftpb.MsgReadIndex), msg(raftpb.MsgHeartbeatResp), msg(raftpb.MsgPreVoteResp), msg(raftpb.MsgPreVote)}
	now, after := splitByDurability(in)
	if got, want := types(now), []raftpb.MessageType{raftpb.MsgProp, raftpb.MsgReadIndex, raftpb.MsgHeartbeatResp, raftpb.MsgPreVote}; !slices.Equal(got, want) {
		t.Errorf("sent at once %v, want %v", got, want)
	}
	if got, want := types(after), []raftpb.MessageType{raftpb.MsgAppResp, raftpb.MsgVoteResp, raftpb.MsgPreVoteResp}; !slices.Equal(got, want) {
		t.Errorf("sent after persisting %v, want %v", got, want)
	}
}
