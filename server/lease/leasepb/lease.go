// Package leasepb holds leasepb.Lease, the record the lessor keeps for each
// lease in the backend's "lease" bucket, with a hand-written encoder that
// emits the bytes etcd v3.7 writes: the proto3 fields ID = 1, TTL = 2 and
// RemainingTTL = 3, all int64 varints, in field order, each left out when
// it is zero (so the zero record encodes to no bytes at all). A negative
// value takes ten bytes, as int64 varints do.
package leasepb

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/cairnkv/cairn/pkg/protofield"
)

// ErrMalformed wraps every decoding error.
var ErrMalformed = errors.New("leasepb: malformed message")

// Field numbers of etcd's leasepb.Lease.
const (
	fieldID           protowire.Number = 1
	fieldTTL          protowire.Number = 2
	fieldRemainingTTL protowire.Number = 3
)

// Lease is one persisted lease: its ID, its granted TTL in seconds and the
// remaining TTL of its last checkpoint (0 if none).
type Lease struct {
	ID           int64
	TTL          int64
	RemainingTTL int64
}

// Size is the length of the encoding of l.
func (l *Lease) Size() int {
	return fieldSize(fieldID, l.ID) + fieldSize(fieldTTL, l.TTL) + fieldSize(fieldRemainingTTL, l.RemainingTTL)
}

func fieldSize(num protowire.Number, v int64) int {
	if v == 0 {
		return 0
	}
	return protofield.SizeVarint(num, uint64(v))
}

// Marshal returns the encoding of l.
func (l *Lease) Marshal() []byte {
	b := make([]byte, 0, l.Size())
	b = appendField(b, fieldID, l.ID)
	b = appendField(b, fieldTTL, l.TTL)
	return appendField(b, fieldRemainingTTL, l.RemainingTTL)
}

func appendField(b []byte, num protowire.Number, v int64) []byte {
	if v == 0 {
		return b
	}
	return protofield.AppendVarint(b, num, uint64(v))
}

var fields = []protofield.Field[Lease]{
	protofield.Varint(fieldID, func(l *Lease, v uint64) { l.ID = int64(v) }),
	protofield.Varint(fieldTTL, func(l *Lease, v uint64) { l.TTL = int64(v) }),
	protofield.Varint(fieldRemainingTTL, func(l *Lease, v uint64) { l.RemainingTTL = int64(v) }),
}

// Unmarshal decodes b into l, replacing its contents. Unknown fields are
// skipped, as protobuf decoders do.
func (l *Lease) Unmarshal(b []byte) error {
	*l = Lease{}
	if err := protofield.Unmarshal(b, l, fields); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return nil
}
