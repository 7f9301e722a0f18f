package leasepb

import (
	"bytes"
	"errors"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/cairnkv/cairn/pkg/protofield/protofieldtest"
)

// The expected bytes are what a proto3 encoder (gogo's generated Marshal in
// etcd) writes: zero fields omitted, fields in number order, int64 varints.
func TestEncoding(t *testing.T) {
	tests := []struct {
		name string
		in   Lease
		want []byte
	}{
		{"zero", Lease{}, []byte{}},
		{"id only", Lease{ID: 1}, []byte{0x08, 0x01}},
		{"id and ttl", Lease{ID: 0x694d7bf85e2a4c0b, TTL: 60},
			[]byte{0x08, 0x8b, 0x98, 0xa9, 0xf1, 0x85, 0xff, 0xde, 0xa6, 0x69, 0x10, 0x3c}},
		{"all three", Lease{ID: 300, TTL: 5, RemainingTTL: 3}, []byte{0x08, 0xac, 0x02, 0x10, 0x05, 0x18, 0x03}},
		{"ttl without id", Lease{TTL: 2}, []byte{0x10, 0x02}},
		{"max ttl", Lease{ID: 7, TTL: 9000000000}, []byte{0x08, 0x07, 0x10, 0x80, 0xb4, 0xc4, 0xc3, 0x21}},
		{"negative id takes ten bytes", Lease{ID: -1},
			[]byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.Marshal()
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("Marshal = % x, want % x", got, tt.want)
			}
			if tt.in.Size() != len(tt.want) {
				t.Errorf("Size = %d, want %d", tt.in.Size(), len(tt.want))
			}
			back := Lease{ID: 99, TTL: 99, RemainingTTL: 99}
			if err := back.Unmarshal(got); err != nil || back != tt.in {
				t.Fatalf("Unmarshal = %+v, %v; want %+v", back, err, tt.in)
			}
		})
	}
}

func TestUnmarshal(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		want    Lease
		wantErr bool
	}{
		{"unknown varint field skipped", []byte{0x08, 0x02, 0x20, 0x07, 0x10, 0x03}, Lease{ID: 2, TTL: 3}, false},
		{"unknown bytes field skipped", []byte{0x2a, 0x02, 'h', 'i', 0x08, 0x04}, Lease{ID: 4}, false},
		{"later field wins", []byte{0x08, 0x01, 0x08, 0x02}, Lease{ID: 2}, false},
		{"truncated varint", []byte{0x08, 0x80}, Lease{}, true},
		{"wrong wire type", []byte{0x0a, 0x01, 0x00}, Lease{}, true},
		{"bad tag", []byte{0x00}, Lease{}, true},
		{"truncated unknown field", []byte{0x2a, 0x05, 'h'}, Lease{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Lease
			err := got.Unmarshal(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("err = %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestMatchesProtoEncoder cross-checks against the protobuf runtime:
// etcdserverpb.LeaseCheckpoint has the same first two fields (int64 ID = 1,
// int64 remaining_TTL = 2), so with RemainingTTL zero both encode alike.
func TestMatchesProtoEncoder(t *testing.T) {
	for _, v := range []struct{ id, ttl int64 }{{0, 0}, {1, 0}, {0, 5}, {-3, 9000000000}, {1 << 62, 1}} {
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&pb.LeaseCheckpoint{ID: v.id, Remaining_TTL: v.ttl})
		if err != nil {
			t.Fatal(err)
		}
		l := Lease{ID: v.id, TTL: v.ttl}
		if got := l.Marshal(); !bytes.Equal(got, want) {
			t.Errorf("%+v: Marshal = % x, protobuf runtime = % x", l, got, want)
		}
	}
}

// TestMatchesLeaseProto cross-checks all three fields against the protobuf
// runtime, with etcd's lease.proto (proto3) as message type.
func TestMatchesLeaseProto(t *testing.T) {
	int64Field := func(name string, num int32) protofieldtest.Field {
		return protofieldtest.Field{Name: name, Num: num, Type: descriptorpb.FieldDescriptorProto_TYPE_INT64}
	}
	mt, err := protofieldtest.MessageType("proto3", int64Field("ID", 1), int64Field("TTL", 2), int64Field("RemainingTTL", 3))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []Lease{{}, {RemainingTTL: 4}, {ID: -9, TTL: 1 << 40, RemainingTTL: -1}} {
		want, err := protofieldtest.Marshal(mt, map[protoreflect.FieldNumber]protoreflect.Value{
			1: protoreflect.ValueOfInt64(l.ID), 2: protoreflect.ValueOfInt64(l.TTL), 3: protoreflect.ValueOfInt64(l.RemainingTTL)})
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Marshal(); !bytes.Equal(got, want) {
			t.Errorf("%+v: Marshal = % x, protobuf runtime = % x", l, got, want)
		}
	}
}
