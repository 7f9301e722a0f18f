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
)

// ErrMalformed wraps every decoding error.
var ErrMalformed = errors.New("leasepb: malformed message")

// Field numbers of etcd's leasepb.Lease.
const (
	fieldID           = 1
	fieldTTL          = 2
	fieldRemainingTTL = 3
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
	return fieldSize(l.ID) + fieldSize(l.TTL) + fieldSize(l.RemainingTTL)
}

func fieldSize(v int64) int {
	if v == 0 {
		return 0
	}
	return 1 + protowire.SizeVarint(uint64(v))
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
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

// Unmarshal decodes b into l, replacing its contents. Unknown fields are
// skipped, as protobuf decoders do.
func (l *Lease) Unmarshal(b []byte) error {
	*l = Lease{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", ErrMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		dst := l.field(num)
		if dst != nil && typ != protowire.VarintType {
			return fmt.Errorf("%w: field %d has wire type %d", ErrMalformed, num, typ)
		}
		if dst != nil {
			var v uint64
			v, n = protowire.ConsumeVarint(b)
			*dst = int64(v)
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", ErrMalformed, num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return nil
}

// field returns where field num is stored, nil for an unknown field.
func (l *Lease) field(num protowire.Number) *int64 {
	switch num {
	case fieldID:
		return &l.ID
	case fieldTTL:
		return &l.TTL
	case fieldRemainingTTL:
		return &l.RemainingTTL
	}
	return nil
}
