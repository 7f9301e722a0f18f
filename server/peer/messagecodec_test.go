package peer

import (
	"bytes"
	"encoding/binary"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/protofield"
)

// What unmarshalMessage gives must always be what proto.Unmarshal gives;
// fast says whether the hand decoder (not the fallback) must take it.
func TestUnmarshalMessageMatchesProto(t *testing.T) {
	resp := msg(raftpb.MsgAppResp, 2, 1, 3, 40)
	resp.Reject, resp.RejectHint, resp.LogTerm = proto.Bool(true), proto.Uint64(17), proto.Uint64(2)
	prop := msg(raftpb.MsgProp, 2, 1, 0, 0)
	prop.Entries = []*raftpb.Entry{{Data: []byte("a")}, {Data: []byte("bc"), Type: raftpb.EntryConfChange.Enum()}}
	vote := msg(raftpb.MsgVote, 3, 1, 9, 50)
	vote.Vote, vote.Commit, vote.Context = proto.Uint64(3), proto.Uint64(44), []byte("campaign")
	withResponses := msg(raftpb.MsgStorageAppend, 1, 1, 1, 1)
	withResponses.Responses = []*raftpb.Message{msg(raftpb.MsgStorageAppendResp, 1, 1, 1, 1)}
	cases := []struct {
		name string
		m    *raftpb.Message
		fast bool
	}{
		{"append response", resp, true},
		{"proposal", prop, true},
		{"vote", vote, true},
		{"append", appendMsg(1, 2, 5, 10, 3, 100), true},
		{"link heartbeat", linkHeartbeat(), true},
		{"storage responses", withResponses, false},
	}
	for _, m := range sampleMessages() {
		cases = append(cases, struct {
			name string
			m    *raftpb.Message
			fast bool
		}{m.GetType().String(), m, m.Snapshot == nil})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := proto.Marshal(tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := parseMessage(b); ok != tc.fast {
				t.Fatalf("hand decoder took it: %v, want %v", ok, tc.fast)
			}
			checkUnmarshalMessage(t, b)
		})
	}
}

func TestUnmarshalMessageOddInputs(t *testing.T) {
	entryWithUnknown := protofield.AppendVarint(nil, 15, 1)
	for name, b := range map[string][]byte{
		"reject as 2":             protofield.AppendVarint(nil, msgRejectField, 2),
		"unknown message type":    protofield.AppendVarint(nil, msgTypeField, 999),
		"huge message type":       protofield.AppendVarint(nil, msgTypeField, 1<<40),
		"unknown field":           protofield.AppendVarint(nil, 20, 1),
		"entry with unknown":      protofield.AppendBytes(nil, msgEntriesField, entryWithUnknown),
		"repeated from":           protofield.AppendVarint(protofield.AppendVarint(nil, msgFromField, 1), msgFromField, 2),
		"fixed64 field":           protowire.AppendFixed64(protowire.AppendTag(nil, msgTermField, protowire.Fixed64Type), 1),
		"empty":                   {},
		"empty context and entry": protofield.AppendBytes(protofield.AppendBytes(nil, msgContextField, []byte("")), msgEntriesField, []byte{}),
	} {
		t.Run(name, func(t *testing.T) { checkUnmarshalMessage(t, b) })
	}
	for name, b := range map[string][]byte{
		"truncated varint": {byte(msgTermField<<3 | 0), 0x80},
		"truncated bytes":  {byte(msgContextField<<3 | 2), 9, 'a'},
		"truncated entry":  protofield.AppendBytes(nil, msgEntriesField, []byte("\x22\x05a")),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := unmarshalMessage(b); err == nil {
				t.Fatal("decoded a malformed message")
			}
		})
	}
}

func checkUnmarshalMessage(t *testing.T, b []byte) {
	t.Helper()
	checkDecodesAsProto(t, b, &raftpb.Message{}, unmarshalMessage)
}

// checkDecodesAsProto checks that a hand decoder reads b exactly as
// proto.Unmarshal reads it into want (a new message of the same type).
// The decoder gets its own copy: what it returns may alias it.
func checkDecodesAsProto[M proto.Message](t *testing.T, b []byte, want M, decode func([]byte) (M, error)) {
	t.Helper()
	if err := proto.Unmarshal(b, want); err != nil {
		t.Fatal(err)
	}
	got, err := decode(bytes.Clone(b))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("hand decoding = %v, want %v", got, want)
	}
}

// The hand encoding must be exactly proto.Marshal's, framed with its size.
func TestAppendMessageMatchesProto(t *testing.T) {
	resp := msg(raftpb.MsgAppResp, 2, 1, 3, 40)
	resp.Reject, resp.RejectHint, resp.Commit = proto.Bool(false), proto.Uint64(1<<50), proto.Uint64(39)
	prop := msg(raftpb.MsgProp, 2, 1, 0, 0)
	prop.Entries = []*raftpb.Entry{{Data: []byte("a")}, {}, {Data: []byte{}, Term: proto.Uint64(3)}}
	vote := msg(raftpb.MsgVote, 3, 1, 9, 50)
	vote.Vote, vote.Context, vote.Reject = proto.Uint64(3), []byte{}, proto.Bool(true)
	unknownEntry := msg(raftpb.MsgProp, 2, 1, 0, 0)
	unknownEntry.Entries = []*raftpb.Entry{sampleEntries()["unknown field"]}
	msgs := append(sampleMessages(), resp, prop, vote, linkHeartbeat(), &raftpb.Message{}, unknownEntry)
	for _, m := range msgs {
		t.Run(m.GetType().String(), func(t *testing.T) {
			want, err := proto.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendMessage([]byte{9}, m)
			if err != nil {
				t.Fatal(err)
			}
			want = append(binary.BigEndian.AppendUint64([]byte{9}, uint64(len(want))), want...)
			if !bytes.Equal(got, want) {
				t.Fatalf("appendMessage =\n %x, want\n %x", got, want)
			}
		})
	}
}
