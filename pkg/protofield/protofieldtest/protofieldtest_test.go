package protofieldtest

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

func TestMarshal(t *testing.T) {
	fields := []Field{
		{Name: "a", Num: 1, Type: descriptorpb.FieldDescriptorProto_TYPE_INT64},
		{Name: "b", Num: 2, Type: descriptorpb.FieldDescriptorProto_TYPE_BYTES},
	}
	tests := []struct {
		syntax string
		set    map[protoreflect.FieldNumber]protoreflect.Value
		want   []byte
	}{
		{"proto2", map[protoreflect.FieldNumber]protoreflect.Value{2: protoreflect.ValueOfBytes(nil), 1: protoreflect.ValueOfInt64(0)},
			[]byte{0x08, 0x00, 0x12, 0x00}},
		{"proto3", map[protoreflect.FieldNumber]protoreflect.Value{2: protoreflect.ValueOfBytes([]byte("x")), 1: protoreflect.ValueOfInt64(0)},
			[]byte{0x12, 0x01, 'x'}},
	}
	for _, tt := range tests {
		t.Run(tt.syntax, func(t *testing.T) {
			mt, err := MessageType(tt.syntax, fields...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Marshal(mt, tt.set)
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Fatalf("Marshal = % x, %v; want % x", got, err, tt.want)
			}
		})
	}
}
