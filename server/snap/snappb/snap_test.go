package snappb

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/cairnkv/cairn/pkg/protofield/protofieldtest"
)

func TestEncoding(t *testing.T) {
	tests := []struct {
		name string
		in   Snapshot
		want []byte
	}{
		{"zero crc still written", Snapshot{Data: []byte{}}, []byte{0x08, 0x00, 0x12, 0x00}},
		{"crc and data", Snapshot{Crc: 200, Data: []byte("hi")}, []byte{0x08, 0xc8, 0x01, 0x12, 0x02, 'h', 'i'}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.Marshal()
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("got % x, want % x", got, tt.want)
			}
			var back Snapshot
			if err := back.Unmarshal(got); err != nil || back.Crc != tt.in.Crc || !bytes.Equal(back.Data, tt.in.Data) {
				t.Fatalf("round trip %+v, %v", back, err)
			}
		})
	}
	var s Snapshot
	for _, bad := range [][]byte{{0x08}, {0x12, 0x05}, {0x0a, 0x00}} {
		if err := s.Unmarshal(bad); err == nil {
			t.Fatalf("Unmarshal(% x) succeeded", bad)
		}
	}
}

// TestMatchesProtoEncoder cross-checks against the protobuf runtime, with
// etcd's snap.proto as message type: proto2, crc always written (gogoproto
// nullable=false), data when set.
func TestMatchesProtoEncoder(t *testing.T) {
	mt, err := protofieldtest.MessageType("proto2",
		protofieldtest.Field{Name: "crc", Num: 1, Type: descriptorpb.FieldDescriptorProto_TYPE_UINT32},
		protofieldtest.Field{Name: "data", Num: 2, Type: descriptorpb.FieldDescriptorProto_TYPE_BYTES})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Snapshot{{}, {Crc: 1<<32 - 1}, {Data: []byte{}}, {Crc: 9, Data: bytes.Repeat([]byte("s"), 300)}} {
		set := map[protoreflect.FieldNumber]protoreflect.Value{1: protoreflect.ValueOfUint32(s.Crc)}
		if s.Data != nil {
			set[2] = protoreflect.ValueOfBytes(s.Data)
		}
		want, err := protofieldtest.Marshal(mt, set)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Marshal(); !bytes.Equal(got, want) {
			t.Errorf("Marshal = % x, protobuf runtime = % x", got, want)
		}
	}
}
