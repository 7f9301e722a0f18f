package walpb

import (
	"bytes"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/cairnkv/cairn/pkg/protofield/protofieldtest"
)

func TestRecordEncoding(t *testing.T) {
	tests := []struct {
		name string
		rec  Record
		want []byte
	}{
		{"crc record, zero values still written", Record{Type: 4}, []byte{0x08, 0x04, 0x10, 0x00}},
		{"nil data omitted", Record{Type: 4, Crc: 0x12345678}, []byte{0x08, 0x04, 0x10, 0xf8, 0xac, 0xd1, 0x91, 0x01}},
		{"empty data written", Record{Type: 1, Crc: 1, Data: []byte{}}, []byte{0x08, 0x01, 0x10, 0x01, 0x1a, 0x00}},
		{"data", Record{Type: 2, Crc: 300, Data: []byte("ab")}, []byte{0x08, 0x02, 0x10, 0xac, 0x02, 0x1a, 0x02, 'a', 'b'}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.rec.Marshal()
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("got % x, want % x", got, tt.want)
			}
			if tt.rec.Size() != len(got) {
				t.Fatalf("Size %d, encoded %d", tt.rec.Size(), len(got))
			}
			var back Record
			if err := back.Unmarshal(got); err != nil {
				t.Fatal(err)
			}
			if back.Type != tt.rec.Type || back.Crc != tt.rec.Crc || !bytes.Equal(back.Data, tt.rec.Data) || (back.Data == nil) != (tt.rec.Data == nil) {
				t.Fatalf("round trip: %+v, want %+v", back, tt.rec)
			}
		})
	}
}

func TestSnapshotEncoding(t *testing.T) {
	cs := &raftpb.ConfState{Voters: []uint64{1, 2}}
	csBytes, err := proto.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	withCS := append([]byte{0x08, 0x05, 0x10, 0x02, 0x1a, byte(len(csBytes))}, csBytes...)
	tests := []struct {
		name string
		snap Snapshot
		want []byte
	}{
		{"initial empty snapshot", Snapshot{}, []byte{0x08, 0x00, 0x10, 0x00}},
		{"with conf state", Snapshot{Index: 5, Term: 2, ConfState: cs}, withCS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.snap.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("got % x, want % x", got, tt.want)
			}
			var back Snapshot
			if err := back.Unmarshal(got); err != nil {
				t.Fatal(err)
			}
			if back.Index != tt.snap.Index || back.Term != tt.snap.Term || !proto.Equal(back.ConfState, tt.snap.ConfState) {
				t.Fatalf("round trip: %+v", back)
			}
		})
	}
}

func TestUnmarshalRejectsGarbage(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"truncated varint", []byte{0x08, 0x80}},
		{"truncated bytes", []byte{0x1a, 0x05, 'a'}},
		{"wrong wire type", []byte{0x0a, 0x00}},
		{"bad tag", []byte{0x00}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Record
			if err := r.Unmarshal(tt.in); err == nil {
				t.Fatalf("Record.Unmarshal(% x) succeeded", tt.in)
			}
		})
	}
}

func TestUnmarshalSkipsUnknownFields(t *testing.T) {
	in := []byte{0x08, 0x02, 0x20, 0x07, 0x10, 0x03}
	var r Record
	if err := r.Unmarshal(in); err != nil {
		t.Fatal(err)
	}
	if r.Type != 2 || r.Crc != 3 {
		t.Fatalf("%+v", r)
	}
}

// TestMatchesProtoEncoder cross-checks both messages against the protobuf
// runtime, with etcd's walpb.proto as message types: proto2, and the
// fields etcd always writes (gogoproto nullable=false) set even when zero.
func TestMatchesProtoEncoder(t *testing.T) {
	recordType := messageType(t, protofieldtest.Field{Name: "type", Num: 1, Type: descriptorpb.FieldDescriptorProto_TYPE_INT64},
		protofieldtest.Field{Name: "crc", Num: 2, Type: descriptorpb.FieldDescriptorProto_TYPE_UINT32},
		protofieldtest.Field{Name: "data", Num: 3, Type: descriptorpb.FieldDescriptorProto_TYPE_BYTES})
	for _, r := range []Record{{}, {Type: -1, Crc: 1 << 31}, {Type: 2, Crc: 7, Data: []byte{}}, {Type: 1, Data: bytes.Repeat([]byte("x"), 200)}} {
		set := map[protoreflect.FieldNumber]protoreflect.Value{1: protoreflect.ValueOfInt64(r.Type), 2: protoreflect.ValueOfUint32(r.Crc)}
		if r.Data != nil {
			set[3] = protoreflect.ValueOfBytes(r.Data)
		}
		checkSameBytes(t, r.Marshal(), recordType, set)
	}

	snapType := messageType(t, protofieldtest.Field{Name: "index", Num: 1, Type: descriptorpb.FieldDescriptorProto_TYPE_UINT64},
		protofieldtest.Field{Name: "term", Num: 2, Type: descriptorpb.FieldDescriptorProto_TYPE_UINT64},
		protofieldtest.Field{Name: "conf_state", Num: 3, Type: descriptorpb.FieldDescriptorProto_TYPE_BYTES})
	cs := &raftpb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}}
	for _, s := range []Snapshot{{}, {Index: 1 << 40, Term: 3, ConfState: cs}, {ConfState: &raftpb.ConfState{}}} {
		set := map[protoreflect.FieldNumber]protoreflect.Value{1: protoreflect.ValueOfUint64(s.Index), 2: protoreflect.ValueOfUint64(s.Term)}
		if s.ConfState != nil {
			csBytes, err := proto.Marshal(s.ConfState)
			if err != nil {
				t.Fatal(err)
			}
			set[3] = protoreflect.ValueOfBytes(csBytes)
		}
		got, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		checkSameBytes(t, got, snapType, set)
	}
}

func messageType(t *testing.T, fields ...protofieldtest.Field) protoreflect.MessageType {
	t.Helper()
	mt, err := protofieldtest.MessageType("proto2", fields...)
	if err != nil {
		t.Fatal(err)
	}
	return mt
}

func checkSameBytes(t *testing.T, got []byte, mt protoreflect.MessageType, set map[protoreflect.FieldNumber]protoreflect.Value) {
	t.Helper()
	want, err := protofieldtest.Marshal(mt, set)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Marshal = % x, protobuf runtime = % x", got, want)
	}
}
