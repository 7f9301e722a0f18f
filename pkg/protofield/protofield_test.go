package protofield

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/cairnkv/cairn/pkg/protofield/protofieldtest"
)

// record is a message of each kind of field the package decodes.
type record struct {
	id    int64
	crc   uint32
	data  []byte
	inner []byte
}

var errBadInner = errors.New("bad inner message")

var recordFields = []Field[record]{
	Varint(1, func(r *record, v uint64) { r.id = int64(v) }),
	Varint(2, func(r *record, v uint64) { r.crc = uint32(v) }),
	Bytes(3, func(r *record, v []byte) { r.data = v }),
	Message(4, func(r *record, v []byte) error {
		if bytes.Equal(v, []byte("bad")) {
			return errBadInner
		}
		r.inner = v
		return nil
	}),
}

func TestUnmarshal(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		want    record
		wantErr bool
	}{
		{"empty", nil, record{}, false},
		{"all fields", []byte{0x08, 0x7f, 0x10, 0xac, 0x02, 0x1a, 0x01, 'd', 0x22, 0x01, 'i'},
			record{id: 127, crc: 300, data: []byte("d"), inner: []byte("i")}, false},
		{"negative int64 in ten bytes", []byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
			record{id: -1}, false},
		{"uint32 truncates", []byte{0x10, 0x80, 0x80, 0x80, 0x80, 0x10}, record{crc: 0}, false},
		{"last value wins", []byte{0x08, 0x01, 0x08, 0x02}, record{id: 2}, false},
		{"unknown fields skipped", []byte{0x28, 0x07, 0x32, 0x01, 'x', 0x3d, 1, 2, 3, 4, 0x08, 0x05}, record{id: 5}, false},
		{"unknown group skipped", []byte{0x2b, 0x08, 0x01, 0x2c, 0x08, 0x03}, record{id: 3}, false},
		{"bad tag", []byte{0x00}, record{}, true},
		{"field number too large", []byte{0xc8, 0x97, 0xbd, 0x97, 0x30, 0x30}, record{}, true},
		{"truncated varint", []byte{0x08, 0x80}, record{}, true},
		{"truncated bytes", []byte{0x1a, 0x05, 'a'}, record{}, true},
		{"truncated unknown field", []byte{0x32, 0x05, 'a'}, record{}, true},
		{"known field, other wire type", []byte{0x0a, 0x00}, record{}, true},
		{"inner message rejected", []byte{0x22, 0x03, 'b', 'a', 'd'}, record{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got record
			err := Unmarshal(tt.in, &got, recordFields)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got.id != tt.want.id || got.crc != tt.want.crc || !bytes.Equal(got.data, tt.want.data) || !bytes.Equal(got.inner, tt.want.inner) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestUnmarshalErrorNamesField(t *testing.T) {
	var r record
	err := Unmarshal([]byte{0x22, 0x03, 'b', 'a', 'd'}, &r, recordFields)
	if !errors.Is(err, errBadInner) || err.Error() != "field 4: bad inner message" {
		t.Fatalf("err = %v", err)
	}
}

// TestBytesCannotGrowIntoNextField appends to a decoded value: the bytes of
// the field after it must stay as they were.
func TestBytesCannotGrowIntoNextField(t *testing.T) {
	in := []byte{0x1a, 0x01, 'a', 0x08, 0x01}
	var r record
	if err := Unmarshal(in, &r, recordFields); err != nil {
		t.Fatal(err)
	}
	_ = append(r.data, 'X')
	if in[3] != 0x08 {
		t.Fatalf("append to the value overwrote the next field: % x", in)
	}
}

func TestAppendAndSize(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		size int
		want []byte
	}{
		{"varint", AppendVarint(nil, 1, 300), SizeVarint(1, 300), []byte{0x08, 0xac, 0x02}},
		{"zero varint", AppendVarint(nil, 2, 0), SizeVarint(2, 0), []byte{0x10, 0x00}},
		{"bytes", AppendBytes(nil, 3, []byte("ab")), SizeBytes(3, 2), []byte{0x1a, 0x02, 'a', 'b'}},
		{"two-byte tag", AppendBytes(nil, 16, nil), SizeBytes(16, 0), []byte{0x82, 0x01, 0x00}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !bytes.Equal(tt.got, tt.want) || tt.size != len(tt.want) {
				t.Fatalf("got % x (size %d), want % x", tt.got, tt.size, tt.want)
			}
		})
	}
}

// FuzzMatchesProtoUnmarshal decodes the same bytes here and with the
// protobuf library: whatever decodes here decodes there to the same values,
// and what the library rejects is rejected here.
func FuzzMatchesProtoUnmarshal(f *testing.F) {
	mt, err := protofieldtest.MessageType("proto2",
		protofieldtest.Field{Name: "id", Num: 1, Type: descriptorpb.FieldDescriptorProto_TYPE_INT64},
		protofieldtest.Field{Name: "crc", Num: 2, Type: descriptorpb.FieldDescriptorProto_TYPE_UINT32},
		protofieldtest.Field{Name: "data", Num: 3, Type: descriptorpb.FieldDescriptorProto_TYPE_BYTES},
		protofieldtest.Field{Name: "inner", Num: 4, Type: descriptorpb.FieldDescriptorProto_TYPE_BYTES},
	)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{
		{0x08, 0x7f, 0x10, 0xac, 0x02, 0x1a, 0x01, 'd', 0x22, 0x01, 'i'},
		{0x2b, 0x08, 0x01, 0x2c, 0x08, 0x03},
		{0x0a, 0x00},
		{0x08, 0x80},
	} {
		f.Add(seed)
	}
	fields := mt.Descriptor().Fields()
	f.Fuzz(func(t *testing.T, in []byte) {
		m := mt.New().Interface()
		protoErr := proto.Unmarshal(in, m)
		var r record
		err := Unmarshal(in, &r, recordFields)
		if protoErr != nil {
			if err == nil {
				t.Fatalf("% x: proto.Unmarshal: %v, Unmarshal succeeded", in, protoErr)
			}
			return
		}
		if err != nil {
			// Stricter than the library only where it must be.
			if !errors.Is(err, errBadInner) && !strings.Contains(err.Error(), "has wire type") {
				t.Fatalf("% x: Unmarshal: %v, proto.Unmarshal succeeded", in, err)
			}
			return
		}
		pm := m.ProtoReflect()
		if r.id != pm.Get(fields.ByNumber(1)).Int() || r.crc != uint32(pm.Get(fields.ByNumber(2)).Uint()) ||
			!bytes.Equal(r.data, pm.Get(fields.ByNumber(3)).Bytes()) || !bytes.Equal(r.inner, pm.Get(fields.ByNumber(4)).Bytes()) {
			t.Fatalf("% x: got %+v, proto %v", in, r, m)
		}
	})
}
