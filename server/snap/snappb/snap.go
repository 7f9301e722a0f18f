// Package snappb holds snappb.Snapshot, the envelope of a *.snap file, with
// a hand-written encoder that emits the bytes etcd v3.7 writes: crc (always
// present) then data.
package snappb

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

var errMalformed = errors.New("snappb: malformed message")

// Snapshot wraps an encoded raftpb.Snapshot with its CRC-32C.
type Snapshot struct {
	Crc  uint32
	Data []byte
}

// Marshal returns the encoding of s.
func (s *Snapshot) Marshal() []byte {
	b := make([]byte, 0, 1+protowire.SizeVarint(uint64(s.Crc))+1+protowire.SizeBytes(len(s.Data)))
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(s.Crc))
	if s.Data != nil {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, s.Data)
	}
	return b
}

// Unmarshal decodes b into s, replacing its contents. s.Data aliases b.
func (s *Snapshot) Unmarshal(b []byte) error {
	*s = Snapshot{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", errMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			var v uint64
			v, n = protowire.ConsumeVarint(b)
			s.Crc = uint32(v)
		case num == 2 && typ == protowire.BytesType:
			s.Data, n = protowire.ConsumeBytes(b)
		case num == 1 || num == 2:
			return fmt.Errorf("%w: field %d has wire type %d", errMalformed, num, typ)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", errMalformed, num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return nil
}
