package peer

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"
)

const clusterID = 0x1000

// splitByStream separates what the msgappv2 stream carries from the rest;
// order is only promised within one stream, and proposals have their own
// receive queue.
func splitByStream(ms []*raftpb.Message) (apps, others []*raftpb.Message) {
	var props []*raftpb.Message
	for _, m := range ms {
		switch m.GetType() {
		case raftpb.MsgApp:
			apps = append(apps, m)
		case raftpb.MsgProp:
			props = append(props, m)
		default:
			others = append(others, m)
		}
	}
	return apps, append(others, props...)
}

func assertSameMessages(t *testing.T, what string, got, want []*raftpb.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d messages, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Fatalf("%s: message %d:\n got %v\nwant %v", what, i, got[i], want[i])
		}
	}
}

func TestStreamsDeliverEveryTypeInOrder(t *testing.T) {
	a, b := newMember(t, 1, clusterID), newMember(t, 2, clusterID)
	connect(a, b)
	waitStreams(t, a, 2)
	// A stream reader that failed its first dial (before b served) may mark
	// the peer inactive for a moment after the writers came up; it must
	// settle as active.
	a.rec.waitUntil(t, "peer active with both streams up", func() bool { return !a.tr.ActiveSince(2).IsZero() })

	var want []*raftpb.Message
	for _, m := range sampleMessages() {
		if m.GetType() != raftpb.MsgSnap {
			m.From, m.To = proto.Uint64(1), proto.Uint64(2)
			want = append(want, m)
		}
	}
	for i := range 20 { // consecutive appends exercise the msgappv2 shortcut
		want = append(want, appendMsg(1, 2, 3, 7+uint64(3*i), 3, 10))
	}
	for _, m := range want {
		a.tr.Send([]*raftpb.Message{m})
	}
	b.rec.waitUntil(t, "all messages", func() bool { return len(b.rec.msgs) == len(want) })

	gotApps, gotOthers := splitByStream(b.rec.received())
	wantApps, wantOthers := splitByStream(want)
	assertSameMessages(t, "msgappv2 stream", gotApps, wantApps)
	assertSameMessages(t, "message stream", gotOthers, wantOthers)
	if n := a.rec.unreachable; n != 0 {
		t.Fatalf("%d messages reported unreachable", n)
	}
}

func TestLargeAppendDoesNotHoldBackHeartbeats(t *testing.T) {
	a, b := newMember(t, 1, clusterID), newMember(t, 2, clusterID)
	connect(a, b)
	waitStreams(t, a, 2)

	big := appendMsg(1, 2, 3, 7, 16, 1<<20) // 16 MB on the msgappv2 stream
	hb := msg(raftpb.MsgHeartbeat, 1, 2, 3, 0)
	a.tr.Send([]*raftpb.Message{big})
	if q, _ := a.tr.peer(2).pick(hb); q == a.tr.peer(2).pipeline.msgc {
		t.Fatal("heartbeat routed to the pipeline")
	}
	for range 10 {
		a.tr.Send([]*raftpb.Message{hb})
	}
	b.rec.waitUntil(t, "append and heartbeats", func() bool { return len(b.rec.msgs) == 11 })
	apps, hbs := splitByStream(b.rec.received())
	assertSameMessages(t, "append", apps, []*raftpb.Message{big})
	if len(hbs) != 10 {
		t.Fatalf("got %d heartbeats, want 10", len(hbs))
	}
}

func TestPipelineWhenNoStream(t *testing.T) {
	a, b := newMember(t, 1, clusterID), newMember(t, 2, clusterID)
	// b does not know a, so it opens no streams to a: a must post.
	a.tr.AddPeer(2, []string{b.url})
	want := []*raftpb.Message{msg(raftpb.MsgVote, 1, 2, 4, 9), appendMsg(1, 2, 4, 9, 2, 100), msg(raftpb.MsgHeartbeat, 1, 2, 4, 0)}
	for _, m := range want {
		if q, _ := a.tr.peer(2).pick(m); q != a.tr.peer(2).pipeline.msgc {
			t.Fatal("message not routed to the pipeline without streams")
		}
		a.tr.Send([]*raftpb.Message{m})
		b.rec.waitUntil(t, "posted message", func() bool { return len(b.rec.msgs) == 1 })
		assertSameMessages(t, "pipeline", b.rec.received(), []*raftpb.Message{m})
		b.rec.update(func() { b.rec.msgs = nil })
	}
	if n := a.rec.unreachable; n != 0 {
		t.Fatalf("%d posts reported unreachable", n)
	}
}

func snapMsg(from, to, index uint64) *raftpb.Message {
	m := msg(raftpb.MsgSnap, from, to, 3, 0)
	m.Snapshot = &raftpb.Snapshot{Data: []byte("v2"), Metadata: &raftpb.SnapshotMetadata{
		Index: proto.Uint64(index), Term: proto.Uint64(3), ConfState: &raftpb.ConfState{Voters: []uint64{1, 2}}}}
	return m
}

func TestSnapshotTransfer(t *testing.T) {
	tests := []struct {
		name       string
		saveErr    error
		wantStatus raft.SnapshotStatus
		wantEvents []string
	}{
		{"saved then processed", nil, raft.SnapshotFinish, []string{"save db", "process MsgSnap"}},
		{"save fails", errors.New("disk full"), raft.SnapshotFailure, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newMember(t, 1, clusterID), newMember(t, 2, clusterID)
			connect(a, b)
			a.store.db = bytes.Repeat([]byte("bolt"), 1<<18) // 1 MB
			b.store.saveErr = tt.saveErr
			m := snapMsg(1, 2, 42)
			a.tr.Send([]*raftpb.Message{m})
			a.rec.waitUntil(t, "snapshot report", func() bool { return len(a.rec.snapshots) == 1 })
			if got := a.rec.snapshots[0]; got != tt.wantStatus {
				t.Fatalf("ReportSnapshot(%v), want %v", got, tt.wantStatus)
			}
			b.rec.mu.Lock()
			defer b.rec.mu.Unlock()
			if len(b.rec.events) != len(tt.wantEvents) {
				t.Fatalf("receiver events %v, want %v", b.rec.events, tt.wantEvents)
			}
			for i := range tt.wantEvents {
				if b.rec.events[i] != tt.wantEvents[i] {
					t.Fatalf("receiver events %v, want %v", b.rec.events, tt.wantEvents)
				}
			}
			if tt.saveErr != nil {
				return
			}
			if b.store.index != 42 || !bytes.Equal(b.store.saved.Bytes(), a.store.db) {
				t.Fatalf("saved %d bytes at index %d", b.store.saved.Len(), b.store.index)
			}
			assertSameMessages(t, "snapshot message", b.rec.msgs, []*raftpb.Message{m})
		})
	}
}

func TestClusterIDMismatchRefusedBothWays(t *testing.T) {
	a, b := newMember(t, 1, clusterID), newMember(t, 2, clusterID+1)
	connect(a, b)
	a.tr.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 1, 2, 1, 0)})
	b.tr.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 2, 1, 1, 0)})
	for _, m := range []*member{a, b} {
		m.rec.waitUntil(t, "post refused", func() bool { return m.rec.unreachable > 0 })
	}
	for _, m := range []*member{a, b} {
		if n := len(m.rec.received()); n != 0 {
			t.Fatalf("member %d processed %d messages from another cluster", m.id, n)
		}
		other := 3 - m.id
		if !m.tr.ActiveSince(other).IsZero() {
			t.Fatalf("member %d sees peer %d as active", m.id, other)
		}
		if up := m.tr.peer(other).msgWriter.sendQueue() != nil; up {
			t.Fatalf("member %d accepted a stream from another cluster", m.id)
		}
	}
}

func TestRemovedMemberIsRefused(t *testing.T) {
	a, b := newMember(t, 1, clusterID), newMember(t, 2, clusterID)
	b.rec.setRemoved(1)
	connect(a, b)
	// a's streams from b are refused with 410, so a learns it was removed.
	waitCritical(t, a, ErrMemberRemoved)

	// Once b forgets a, a's posts are refused with 403.
	b.tr.RemovePeer(1)
	a.rec.waitUntil(t, "streams down", func() bool {
		up := a.tr.peer(2).msgWriter.sendQueue() != nil
		return !up
	})
	a.tr.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 1, 2, 1, 0)})
	a.rec.waitUntil(t, "post refused", func() bool { return a.rec.unreachable > 0 })
	waitCritical(t, a, ErrMemberRemoved)
	if n := len(b.rec.received()); n != 0 {
		t.Fatalf("processed %d messages from a removed member", n)
	}
}

func waitCritical(t *testing.T, m *member, want error) {
	t.Helper()
	select {
	case err := <-m.tr.Errors():
		if !errors.Is(err, want) {
			t.Fatalf("critical error %v, want %v", err, want)
		}
	case <-time.After(waitLimit):
		t.Fatalf("no %v reported", want)
	}
}

func TestReconnectAfterStreamsBreak(t *testing.T) {
	a, b := newMember(t, 1, clusterID), newMember(t, 2, clusterID)
	connect(a, b)
	waitStreams(t, a, 2)
	w := a.tr.peer(2).msgWriter
	before := w.streamsOpened()
	a.srv.CloseClientConnections() // cuts b's streams to a
	a.rec.waitUntil(t, "stream reopened", func() bool { return w.streamsOpened() > before })
	waitStreams(t, a, 2)
	hb := msg(raftpb.MsgHeartbeat, 1, 2, 1, 0)
	if q, _ := a.tr.peer(2).pick(hb); q == a.tr.peer(2).pipeline.msgc {
		t.Fatal("heartbeat routed to the pipeline after reconnect")
	}
	a.tr.Send([]*raftpb.Message{hb})
	b.rec.waitUntil(t, "heartbeat", func() bool { return len(b.rec.msgs) == 1 })
}

func TestFullQueueDropsWithoutBlocking(t *testing.T) {
	release := make(chan struct{})
	stuck := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer stuck.Close()
	defer close(release)
	rec := newRecorder()
	rec.raftLoopBusy = make(chan struct{})
	tr := New(Config{ID: 1, ClusterID: clusterID, Raft: rec, Logger: zaptest.NewLogger(t)})
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	defer tr.Stop()
	tr.AddPeer(2, []string{stuck.URL})

	const sent = 500
	sendDone := make(chan struct{})
	go func() { // Send returns although every post hangs and raft is busy
		defer close(sendDone)
		for i := range sent {
			tr.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 1, 2, 1, uint64(i))})
		}
	}()
	select {
	case <-sendDone:
	case <-time.After(waitLimit):
		t.Fatal("Send blocked")
	}
	close(rec.raftLoopBusy)
	// At most one message per pipeline worker plus a full queue got in.
	minDropped := uint64(sent - pipelineWorkers - pipelineQueueSize)
	if got := tr.peer(2).dropped.Load(); got < minDropped {
		t.Fatalf("%d dropped, want at least %d", got, minDropped)
	}
	rec.waitUntil(t, "ReportUnreachable", func() bool { return rec.unreachable > 0 })
}

func TestRemovePeerStopsItsGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, b := newMember(t, 1, clusterID), newMember(t, 2, clusterID)
	connect(a, b)
	waitStreams(t, a, 2)
	waitStreams(t, b, 1)
	a.tr.RemovePeer(2)
	b.tr.RemovePeer(1)
	if !a.tr.ActiveSince(2).IsZero() {
		t.Fatal("removed peer still active")
	}
	a.tr.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 1, 2, 1, 0)}) // dropped quietly
	a.stop()
	b.stop()
}

func TestSnapshotToStoppedPeerFails(t *testing.T) {
	a, b := newMember(t, 1, clusterID), newMember(t, 2, clusterID)
	a.tr.AddPeer(2, []string{b.url})
	p := a.tr.peer(2)
	a.tr.RemovePeer(2)
	p.send(snapMsg(1, 2, 5))
	a.rec.waitUntil(t, "snapshot report", func() bool { return len(a.rec.snapshots) == 1 })
	if a.rec.snapshots[0] != raft.SnapshotFailure {
		t.Fatalf("snapshot reports %v, want one failure", a.rec.snapshots)
	}
}
