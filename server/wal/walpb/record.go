// Package walpb holds the two protobuf messages stored in etcd's write-ahead
// log, walpb.Record and walpb.Snapshot, with hand-written encoders that emit
// exactly the bytes etcd v3.7 writes. etcd always sets Record.type and
// Record.crc (so both appear even when zero), sets Record.data only when it
// has a payload, and always sets Snapshot.index and Snapshot.term.
package walpb

import (
	"errors"
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// errMalformed wraps every decoding failure of a message.
var errMalformed = errors.New("walpb: malformed message")

// Record is one framed entry of a WAL file. Data is the payload named by Type;
// Crc is the rolling CRC-32C over the Data of every record written since the
// WAL was created.
type Record struct {
	Type int64
	Crc  uint32
	// Data is nil when the record has no payload (crc records); a nil and an
	// empty slice encode differently, as in etcd.
	Data []byte
}

// Size returns the encoded length of r.
func (r *Record) Size() int {
	n := 1 + protowire.SizeVarint(uint64(r.Type)) + 1 + protowire.SizeVarint(uint64(r.Crc))
	if r.Data != nil {
		n += 1 + protowire.SizeBytes(len(r.Data))
	}
	return n
}

// AppendMarshal appends the encoding of r to b.
func (r *Record) AppendMarshal(b []byte) []byte {
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(r.Type))
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(r.Crc))
	if r.Data != nil {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, r.Data)
	}
	return b
}

// Marshal returns the encoding of r.
func (r *Record) Marshal() []byte { return r.AppendMarshal(make([]byte, 0, r.Size())) }

// Unmarshal decodes b into r, replacing its contents. r.Data aliases b.
func (r *Record) Unmarshal(b []byte) error {
	*r = Record{}
	return eachField(b, func(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			r.Type = int64(v)
			return n, nil
		case num == 2 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			r.Crc = uint32(v)
			return n, nil
		case num == 3 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n >= 0 {
				r.Data = v[:len(v):len(v)]
			}
			return n, nil
		}
		return skipField(num, typ, b)
	})
}

// Snapshot marks in the WAL that a raft snapshot at Index/Term was taken;
// entries at or before Index are no longer needed for replay.
type Snapshot struct {
	Index uint64
	Term  uint64
	// ConfState is the membership at Index; nil only for the initial
	// snapshot written when the WAL is created.
	ConfState *raftpb.ConfState
}

// Marshal returns the encoding of s.
func (s *Snapshot) Marshal() ([]byte, error) {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, s.Index)
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, s.Term)
	if s.ConfState != nil {
		cs, err := proto.Marshal(s.ConfState)
		if err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, cs)
	}
	return b, nil
}

// Unmarshal decodes b into s, replacing its contents.
func (s *Snapshot) Unmarshal(b []byte) error {
	*s = Snapshot{}
	return eachField(b, func(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			s.Index = v
			return n, nil
		case num == 2 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			s.Term = v
			return n, nil
		case num == 3 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return n, nil
			}
			s.ConfState = &raftpb.ConfState{}
			return n, proto.Unmarshal(v, s.ConfState)
		}
		return skipField(num, typ, b)
	})
}

// eachField walks the fields of an encoded message. decode consumes the
// value of one field from the front of its argument and returns the number
// of bytes used, or a negative protowire error code.
func eachField(b []byte, decode func(protowire.Number, protowire.Type, []byte) (int, error)) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", errMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		m, err := decode(num, typ, b)
		if err != nil {
			return fmt.Errorf("%w: field %d: %v", errMalformed, num, err)
		}
		if m < 0 {
			return fmt.Errorf("%w: field %d: %v", errMalformed, num, protowire.ParseError(m))
		}
		b = b[m:]
	}
	return nil
}

// skipField consumes a field this package does not know, as protobuf
// decoders must, but rejects a known field number sent with the wrong type.
func skipField(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
	if num >= 1 && num <= 3 {
		return 0, fmt.Errorf("unexpected wire type %d", typ)
	}
	return protowire.ConsumeFieldValue(num, typ, b), nil
}
