package raftnode

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// eventLog records persistence calls and sends in the order they happen.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

func (l *eventLog) Save(st *raftpb.HardState, ents []*raftpb.Entry) error {
	if !raft.IsEmptyHardState(st) {
		l.add("save")
	}
	return nil
}
func (l *eventLog) SaveSnap(*raftpb.Snapshot) error { l.add("saveSnap"); return nil }
func (l *eventLog) Sync() error                     { l.add("sync"); return nil }
func (l *eventLog) Send(msgs []*raftpb.Message) {
	for _, m := range msgs {
		l.add("send " + m.GetType().String())
	}
}

// A follower that receives a snapshot makes the HardState committing it
// durable before it acknowledges the snapshot: the leader then counts on
// the follower's log reaching the snapshot, also after a crash.
func TestSnapshotIsSyncedBeforeItIsAcknowledged(t *testing.T) {
	log := &eventLog{}
	n := newFollower(t, log)

	snap := &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{
		Index: proto.Uint64(100), Term: proto.Uint64(5), ConfState: &raftpb.ConfState{Voters: []uint64{1, 2}},
	}}
	msg := &raftpb.Message{Type: raftpb.MsgSnap.Enum(), From: proto.Uint64(2), To: proto.Uint64(1), Term: proto.Uint64(5), Snapshot: snap}
	if err := n.Step(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	ack := "send " + raftpb.MsgAppResp.String()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(log.snapshot(), ack) {
		if time.Now().After(deadline) {
			t.Fatalf("no acknowledgement sent; events %v", log.snapshot())
		}
		time.Sleep(time.Millisecond)
	}
	events := log.snapshot()
	want := []string{"saveSnap", "save", "sync", ack}
	at := 0
	for _, e := range events {
		if at < len(want) && e == want[at] {
			at++
		}
	}
	if at != len(want) {
		t.Errorf("events %v, want %v in this order", events, want)
	}
	<-n.Apply() // the snapshot, handed to the apply loop
}
