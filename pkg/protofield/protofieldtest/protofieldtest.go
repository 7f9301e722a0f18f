// Package protofieldtest builds, for the tests of a hand-written protobuf
// codec, the message type the codec stands for, so that its bytes can be
// checked against what the protobuf library encodes and decodes.
package protofieldtest

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Field is one field of the message: its name, number and type.
type Field struct {
	Name string
	Num  int32
	Type descriptorpb.FieldDescriptorProto_Type
}

// MessageType is a message of the given fields, all optional (in "proto2"
// syntax: with presence, so a zero value that is set is encoded; in
// "proto3": a zero value is not).
func MessageType(syntax string, fields ...Field) (protoreflect.MessageType, error) {
	msg := &descriptorpb.DescriptorProto{Name: proto.String("M")}
	for _, f := range fields {
		msg.Field = append(msg.Field, &descriptorpb.FieldDescriptorProto{
			Name:     proto.String(f.Name),
			JsonName: proto.String(f.Name),
			Number:   proto.Int32(f.Num),
			Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			Type:     f.Type.Enum(),
		})
	}
	file, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:        proto.String("protofieldtest/" + syntax + ".proto"),
		Package:     proto.String("protofieldtest"),
		Syntax:      proto.String(syntax),
		MessageType: []*descriptorpb.DescriptorProto{msg},
	}, nil)
	if err != nil {
		return nil, err
	}
	return dynamicpb.NewMessageType(file.Messages().Get(0)), nil
}

// Marshal encodes a message of type mt with the fields in set set (to a
// zero value too), as the protobuf library does: fields in number order.
func Marshal(mt protoreflect.MessageType, set map[protoreflect.FieldNumber]protoreflect.Value) ([]byte, error) {
	m := mt.New()
	for num, v := range set {
		m.Set(m.Descriptor().Fields().ByNumber(num), v)
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(m.Interface())
}
