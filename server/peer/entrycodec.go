package peer

import (
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/protofield"
)

// Every replicated write crosses the msgappv2 stream as a raftpb.Entry, once
// per follower. The generic protobuf path costs a reflective size pass, a
// marshal pass and, on the way in, one allocation per optional field plus a
// copy of Data. An entry only ever has the four fields below, so both
// directions handle exactly those by hand, producing the bytes
// proto.Marshal would, and leave anything else (unknown fields or enum
// values, malformed input) to the protobuf library, which stays the
// reference for what the bytes mean.

// Field numbers of raftpb.Entry.
const (
	entryTypeField  protowire.Number = 1
	entryTermField  protowire.Number = 2
	entryIndexField protowire.Number = 3
	entryDataField  protowire.Number = 4
)

// entrySize is proto.Size(e) for an entry appendEntry encodes by hand.
func entrySize(e *raftpb.Entry) int {
	n := 0
	if e.Type != nil {
		n += sizeVarintField(uint64(*e.Type))
	}
	n += sizeOptVarint(e.Term) + sizeOptVarint(e.Index)
	if e.Data != nil {
		n += 1 + protowire.SizeBytes(len(e.Data))
	}
	return n
}

// appendEntry appends e as proto.Marshal encodes it (fields in number
// order), preceded by its 8-byte big-endian size as msgappv2 frames it.
func appendEntry(b []byte, e *raftpb.Entry) ([]byte, error) {
	if hasUnknown(e) {
		return appendEntryProto(b, e)
	}
	b = appendUint64BE(b, uint64(entrySize(e)))
	return appendEntryFields(b, e), nil
}

func appendEntryFields(b []byte, e *raftpb.Entry) []byte {
	if e.Type != nil {
		b = protofield.AppendVarint(b, entryTypeField, uint64(*e.Type))
	}
	b = appendOptVarint(b, entryTermField, e.Term)
	b = appendOptVarint(b, entryIndexField, e.Index)
	if e.Data != nil {
		b = protofield.AppendBytes(b, entryDataField, e.Data)
	}
	return b
}

func hasUnknown(m proto.Message) bool { return len(m.ProtoReflect().GetUnknown()) > 0 }

// The fields encoded by hand all have numbers below 16: their tag is one
// byte.

func sizeVarintField(v uint64) int { return 1 + protowire.SizeVarint(v) }

func sizeOptVarint(v *uint64) int {
	if v == nil {
		return 0
	}
	return sizeVarintField(*v)
}

func appendOptVarint(b []byte, num protowire.Number, v *uint64) []byte {
	if v == nil {
		return b
	}
	return protofield.AppendVarint(b, num, *v)
}

func appendEntryProto(b []byte, e *raftpb.Entry) ([]byte, error) {
	b = appendUint64BE(b, uint64(proto.Size(e)))
	return proto.MarshalOptions{}.MarshalAppend(b, e)
}

func appendUint64BE(b []byte, v uint64) []byte {
	return append(b, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32),
		byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// decodedEntry holds an entry and its optional scalars in one allocation.
type decodedEntry struct {
	entry       raftpb.Entry
	term, index uint64
	typ         raftpb.EntryType
}

// entryBlock hands out the decodedEntry values of one message from a
// single allocation: the entries of a message live about as long as each
// other (raft keeps them until they are applied and compacted).
type entryBlock []decodedEntry

func (blk *entryBlock) take() *decodedEntry {
	if len(*blk) == 0 {
		return new(decodedEntry)
	}
	d := &(*blk)[0]
	*blk = (*blk)[1:]
	return d
}

// unmarshalEntry decodes b, which the entry then owns: its Data aliases b.
func unmarshalEntry(b []byte) (*raftpb.Entry, error) {
	return new(decodedEntry).unmarshal(b)
}

// unmarshal decodes b into d, which must be zero, and returns d's entry
// (or, for what only proto decodes, another one).
func (d *decodedEntry) unmarshal(b []byte) (*raftpb.Entry, error) {
	if d.parse(b) {
		return &d.entry, nil
	}
	*d = decodedEntry{}
	e := &raftpb.Entry{}
	if err := proto.Unmarshal(b, e); err != nil {
		return nil, err
	}
	return e, nil
}

// parseEntry decodes the fields an entry has; false for anything the
// protobuf library must judge.
func parseEntry(b []byte) (*decodedEntry, bool) {
	d := &decodedEntry{}
	return d, d.parse(b)
}

// parse decodes b into d, which must be zero.
func (d *decodedEntry) parse(b []byte) bool {
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if wt == protowire.BytesType && num == entryDataField {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return false
			}
			d.entry.Data = v[:len(v):len(v)] // appending to Data must not reach the next field
			b = b[n:]
			continue
		}
		if wt != protowire.VarintType {
			return false
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 || !d.setScalar(num, v) {
			return false
		}
		b = b[n:]
	}
	return true
}

// setScalar stores a varint field; false for an unknown field or an enum
// value raftpb does not define (protobuf keeps those as unknown fields).
func (d *decodedEntry) setScalar(num protowire.Number, v uint64) bool {
	switch num {
	case entryTermField:
		d.term, d.entry.Term = v, &d.term
	case entryIndexField:
		d.index, d.entry.Index = v, &d.index
	case entryTypeField:
		if v > 1<<31-1 {
			return false
		}
		if _, known := raftpb.EntryType_name[int32(v)]; !known {
			return false
		}
		d.typ, d.entry.Type = raftpb.EntryType(v), &d.typ
	default:
		return false
	}
	return true
}
