package peer

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// sampleMessages covers every message type the streams may carry.
func sampleMessages() []*raftpb.Message {
	var ms []*raftpb.Message
	for typ := range raftpb.MessageType_name {
		t := raftpb.MessageType(typ)
		if t == raftpb.MsgSnap {
			continue
		}
		m := msg(t, 1, 2, 3, uint64(typ)+10)
		m.Context = []byte("ctx")
		ms = append(ms, m)
	}
	snap := msg(raftpb.MsgSnap, 1, 2, 3, 0)
	snap.Snapshot = &raftpb.Snapshot{Data: []byte("v2 store"), Metadata: &raftpb.SnapshotMetadata{
		Index: proto.Uint64(100), Term: proto.Uint64(3), ConfState: &raftpb.ConfState{Voters: []uint64{1, 2}}}}
	return append(ms, snap, appendMsg(1, 2, 3, 7, 3, 10))
}

func TestMessageCodecRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	enc := &messageEncoder{w: &buf}
	want := append(sampleMessages(), linkHeartbeat())
	for _, m := range want {
		if err := enc.encode(m); err != nil {
			t.Fatal(err)
		}
	}
	dec := &messageDecoder{r: &buf, limit: maxStreamMessageBytes}
	for i, w := range want {
		got, err := dec.decode()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !proto.Equal(got, w) {
			t.Fatalf("message %d: got %v, want %v", i, got, w)
		}
	}
	if _, err := dec.decode(); err != io.EOF {
		t.Fatalf("after last message: %v, want EOF", err)
	}
}

func TestMessageEncodingFormat(t *testing.T) {
	var buf bytes.Buffer
	if err := (&messageEncoder{w: &buf}).encode(linkHeartbeat()); err != nil {
		t.Fatal(err)
	}
	// 8-byte length 2, then field 1 (type) = 8 (MsgHeartbeat).
	if got, want := hex.EncodeToString(buf.Bytes()), "00000000000000020808"; got != want {
		t.Fatalf("link heartbeat = %s, want %s", got, want)
	}
}

func TestMessageDecoderLimits(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"over limit", binary.BigEndian.AppendUint64(nil, 1<<40), errTooLarge},
		{"short length", []byte{0, 0, 1}, io.ErrUnexpectedEOF},
		{"short body", append(binary.BigEndian.AppendUint64(nil, 10), 8, 8), io.ErrUnexpectedEOF},
		{"short big body", binary.BigEndian.AppendUint64(nil, 1<<20), io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&messageDecoder{r: bytes.NewReader(tt.in), limit: maxStreamMessageBytes}).decode()
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestMsgAppV2RoundTrip(t *testing.T) {
	first := appendMsg(1, 2, 5, 10, 2, 8) // full record: sets term 5, index 12
	next := appendMsg(1, 2, 5, 12, 3, 8)  // continues: append-entries record
	empty := appendMsg(1, 2, 5, 15, 0, 0) // continues with no entries (a commit update)
	newTerm := appendMsg(1, 2, 6, 15, 1, 8)
	newTerm.LogTerm = proto.Uint64(5) // log term differs from term: full record
	after := appendMsg(1, 2, 6, 16, 1, 8)
	want := []*raftpb.Message{first, next, linkHeartbeat(), empty, newTerm, after}
	wantTypes := []byte{msgAppV2App, msgAppV2AppEntries, msgAppV2LinkHeartbeat, msgAppV2AppEntries, msgAppV2App, msgAppV2AppEntries}

	var buf bytes.Buffer
	enc := newMsgAppV2Encoder(&buf)
	dec := newMsgAppV2Decoder(&buf, 2, 1)
	for i, m := range want {
		if err := enc.encode(m); err != nil {
			t.Fatal(err)
		}
		if buf.Bytes()[0] != wantTypes[i] {
			t.Fatalf("message %d: record type %d, want %d", i, buf.Bytes()[0], wantTypes[i])
		}
		got, err := dec.decode()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !proto.Equal(got, m) {
			t.Fatalf("message %d:\n got %v\nwant %v", i, got, m)
		}
		if buf.Len() != 0 {
			t.Fatalf("message %d: %d bytes left over", i, buf.Len())
		}
	}
}

// TestMsgAppV2AppEntriesFormat pins the bytes of an append-entries record.
func TestMsgAppV2AppEntriesFormat(t *testing.T) {
	enc := newMsgAppV2Encoder(io.Discard)
	enc.term, enc.index = 5, 12
	var buf bytes.Buffer
	enc.w = &buf
	m := appendMsg(1, 2, 5, 12, 1, 0)
	m.Entries[0].Data = nil
	m.Commit = proto.Uint64(9)
	if err := enc.encode(m); err != nil {
		t.Fatal(err)
	}
	want := "01" + "0000000000000001" + // type, one entry
		"0000000000000006" + "0800" + "1005" + "180d" + // entry size; Type normal, Term 5, Index 13
		"0000000000000009" // commit
	if got := hex.EncodeToString(buf.Bytes()); got != want {
		t.Fatalf("record = %s\n want %s", got, want)
	}
	if enc.index != 13 || enc.term != 5 {
		t.Fatalf("encoder state = (%d,%d), want (5,13)", enc.term, enc.index)
	}
}

func TestMsgAppV2DecoderRejectsUnknownType(t *testing.T) {
	_, err := newMsgAppV2Decoder(bytes.NewReader([]byte{7}), 2, 1).decode()
	if err == nil || err.Error() != "failed to parse type 7 in msgappv2 stream" {
		t.Fatalf("err = %v", err)
	}
}
