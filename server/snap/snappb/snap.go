// Package snappb holds snappb.Snapshot, the envelope of a *.snap file, with
// a hand-written encoder that emits the bytes etcd v3.7 writes: crc (always
// present) then data.
package snappb

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/cairnkv/cairn/pkg/protofield"
)

var errMalformed = errors.New("snappb: malformed message")

// Snapshot wraps an encoded raftpb.Snapshot with its CRC-32C.
type Snapshot struct {
	Crc  uint32
	Data []byte
}

// Field numbers of etcd's snappb.Snapshot.
const (
	crcField  protowire.Number = 1
	dataField protowire.Number = 2
)

// Marshal returns the encoding of s.
func (s *Snapshot) Marshal() []byte {
	b := make([]byte, 0, protofield.SizeVarint(crcField, uint64(s.Crc))+protofield.SizeBytes(dataField, len(s.Data)))
	b = protofield.AppendVarint(b, crcField, uint64(s.Crc))
	if s.Data != nil {
		b = protofield.AppendBytes(b, dataField, s.Data)
	}
	return b
}

var fields = []protofield.Field[Snapshot]{
	protofield.Varint(crcField, func(s *Snapshot, v uint64) { s.Crc = uint32(v) }),
	protofield.Bytes(dataField, func(s *Snapshot, v []byte) { s.Data = v }),
}

// Unmarshal decodes b into s, replacing its contents. s.Data aliases b.
func (s *Snapshot) Unmarshal(b []byte) error {
	*s = Snapshot{}
	if err := protofield.Unmarshal(b, s, fields); err != nil {
		return fmt.Errorf("%w: %v", errMalformed, err)
	}
	return nil
}
