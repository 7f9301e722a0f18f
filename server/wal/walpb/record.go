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

	"github.com/cairnkv/cairn/pkg/protofield"
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

// Field numbers of etcd's walpb.Record.
const (
	recordTypeField protowire.Number = 1
	recordCrcField  protowire.Number = 2
	recordDataField protowire.Number = 3
)

// Size returns the encoded length of r.
func (r *Record) Size() int {
	n := protofield.SizeVarint(recordTypeField, uint64(r.Type)) + protofield.SizeVarint(recordCrcField, uint64(r.Crc))
	if r.Data != nil {
		n += protofield.SizeBytes(recordDataField, len(r.Data))
	}
	return n
}

// AppendMarshal appends the encoding of r to b.
func (r *Record) AppendMarshal(b []byte) []byte {
	b = protofield.AppendVarint(b, recordTypeField, uint64(r.Type))
	b = protofield.AppendVarint(b, recordCrcField, uint64(r.Crc))
	if r.Data != nil {
		b = protofield.AppendBytes(b, recordDataField, r.Data)
	}
	return b
}

// Marshal returns the encoding of r.
func (r *Record) Marshal() []byte { return r.AppendMarshal(make([]byte, 0, r.Size())) }

var recordFields = []protofield.Field[Record]{
	protofield.Varint(recordTypeField, func(r *Record, v uint64) { r.Type = int64(v) }),
	protofield.Varint(recordCrcField, func(r *Record, v uint64) { r.Crc = uint32(v) }),
	protofield.Bytes(recordDataField, func(r *Record, v []byte) { r.Data = v }),
}

// Unmarshal decodes b into r, replacing its contents. r.Data aliases b.
func (r *Record) Unmarshal(b []byte) error {
	*r = Record{}
	return malformed(protofield.Unmarshal(b, r, recordFields))
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

// Field numbers of etcd's walpb.Snapshot.
const (
	snapIndexField     protowire.Number = 1
	snapTermField      protowire.Number = 2
	snapConfStateField protowire.Number = 3
)

// Marshal returns the encoding of s.
func (s *Snapshot) Marshal() ([]byte, error) {
	var b []byte
	b = protofield.AppendVarint(b, snapIndexField, s.Index)
	b = protofield.AppendVarint(b, snapTermField, s.Term)
	if s.ConfState != nil {
		cs, err := proto.Marshal(s.ConfState)
		if err != nil {
			return nil, err
		}
		b = protofield.AppendBytes(b, snapConfStateField, cs)
	}
	return b, nil
}

var snapshotFields = []protofield.Field[Snapshot]{
	protofield.Varint(snapIndexField, func(s *Snapshot, v uint64) { s.Index = v }),
	protofield.Varint(snapTermField, func(s *Snapshot, v uint64) { s.Term = v }),
	protofield.Message(snapConfStateField, func(s *Snapshot, v []byte) error {
		s.ConfState = &raftpb.ConfState{}
		return proto.Unmarshal(v, s.ConfState)
	}),
}

// Unmarshal decodes b into s, replacing its contents.
func (s *Snapshot) Unmarshal(b []byte) error {
	*s = Snapshot{}
	return malformed(protofield.Unmarshal(b, s, snapshotFields))
}

// malformed marks a decoding error as this package's.
func malformed(err error) error {
	if err != nil {
		return fmt.Errorf("%w: %v", errMalformed, err)
	}
	return nil
}
