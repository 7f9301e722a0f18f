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

func sampleEntries() map[string]*raftpb.Entry {
	withUnknown := &raftpb.Entry{Index: proto.Uint64(9)}
	withUnknown.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 5))
	return map[string]*raftpb.Entry{
		"empty":          {},
		"normal":         {Term: proto.Uint64(3), Index: proto.Uint64(1 << 40), Type: raftpb.EntryNormal.Enum(), Data: []byte("put k v")},
		"conf change v2": {Term: proto.Uint64(1), Index: proto.Uint64(2), Type: raftpb.EntryConfChangeV2.Enum(), Data: []byte{1, 2}},
		"empty data":     {Term: proto.Uint64(1), Index: proto.Uint64(2), Data: []byte{}},
		"no data":        {Term: proto.Uint64(0), Index: proto.Uint64(0), Type: raftpb.EntryNormal.Enum()},
		"big data":       {Term: proto.Uint64(7), Index: proto.Uint64(8), Data: bytes.Repeat([]byte("x"), 70000)},
		"unknown field":  withUnknown,
	}
}

// The hand encoding must be exactly proto.Marshal's, framed with its size.
func TestAppendEntryMatchesProto(t *testing.T) {
	for name, e := range sampleEntries() {
		t.Run(name, func(t *testing.T) {
			want, err := proto.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendEntry([]byte("prefix"), e)
			if err != nil {
				t.Fatal(err)
			}
			want = append(binary.BigEndian.AppendUint64([]byte("prefix"), uint64(len(want))), want...)
			if !bytes.Equal(got, want) {
				t.Fatalf("appendEntry = %x, want %x", got, want)
			}
		})
	}
}

func TestUnmarshalEntryMatchesProto(t *testing.T) {
	inputs := map[string][]byte{
		"unknown enum value": protowire.AppendVarint(protowire.AppendTag(nil, entryTypeField, protowire.VarintType), 7),
		"negative enum":      protowire.AppendVarint(protowire.AppendTag(nil, entryTypeField, protowire.VarintType), 1<<64-1),
		"unknown field":      protowire.AppendVarint(protowire.AppendTag(nil, 12, protowire.VarintType), 1),
		"term as bytes":      protowire.AppendBytes(protowire.AppendTag(nil, entryTermField, protowire.BytesType), []byte{1}),
		"repeated term":      protofield.AppendVarint(protofield.AppendVarint(nil, entryTermField, 4), entryTermField, 5),
		"repeated data":      protofield.AppendBytes(protofield.AppendBytes(nil, entryDataField, []byte("a")), entryDataField, []byte("bc")),
	}
	for name, e := range sampleEntries() {
		b, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		inputs[name] = b
	}
	for name, b := range inputs {
		t.Run(name, func(t *testing.T) { checkDecodesAsProto(t, b, &raftpb.Entry{}, unmarshalEntry) })
	}
}

func TestUnmarshalEntryRejectsWhatProtoRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"truncated varint": {byte(entryTermField<<3 | 0), 0x80},
		"truncated bytes":  {byte(entryDataField<<3 | 2), 5, 'a'},
		"bad tag":          {0x80},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := unmarshalEntry(b); err == nil {
				t.Fatal("decoded malformed entry")
			}
		})
	}
}

// Appending to a decoded entry's Data must not overwrite the record.
func TestUnmarshalEntryDataCapacity(t *testing.T) {
	b := protofield.AppendVarint(protofield.AppendBytes(nil, entryDataField, []byte("ab")), entryTermField, 3)
	e, err := unmarshalEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(e.Data, 'z')
	if e.GetTerm() != 3 || string(e.Data) != "ab" {
		t.Fatalf("entry changed by append: %v", e)
	}
	if _, err := unmarshalEntry(b); err != nil {
		t.Fatalf("record damaged by append: %v", err)
	}
}
