package peer

import (
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/protofield"
)

// The leader decodes every follower's MsgAppResp and forwarded MsgProp from
// the message stream. As for entries (see entrycodec.go), the fields those
// messages use are decoded by hand into one allocation, bytes aliasing the
// record; a snapshot, storage responses, unknown fields or enum values and
// malformed input go to proto.Unmarshal.

// Field numbers of raftpb.Message.
const (
	msgTypeField       protowire.Number = 1
	msgToField         protowire.Number = 2
	msgFromField       protowire.Number = 3
	msgTermField       protowire.Number = 4
	msgLogTermField    protowire.Number = 5
	msgIndexField      protowire.Number = 6
	msgEntriesField    protowire.Number = 7
	msgCommitField     protowire.Number = 8
	msgRejectField     protowire.Number = 10
	msgRejectHintField protowire.Number = 11
	msgContextField    protowire.Number = 12
	msgVoteField       protowire.Number = 13
)

// decodedMessage holds a message and its optional scalars in one allocation.
type decodedMessage struct {
	entries                        entryBlock
	msg                            raftpb.Message
	typ                            raftpb.MessageType
	to, from, term, logTerm, index uint64
	commit, rejectHint, vote       uint64
	reject                         bool
}

// newContinuation is the MsgApp an append-entries record stands for, its
// header fields in one allocation (Commit and Entries still to fill).
func newContinuation(from, to, term, index uint64) *raftpb.Message {
	d := &decodedMessage{typ: raftpb.MsgApp, from: from, to: to, term: term, logTerm: term, index: index}
	m := &d.msg
	m.Type, m.From, m.To, m.Term, m.LogTerm, m.Index = &d.typ, &d.from, &d.to, &d.term, &d.logTerm, &d.index
	return m
}

// unmarshalMessage decodes b, which the message then owns: its Context and
// entries' Data alias b.
func unmarshalMessage(b []byte) (*raftpb.Message, error) {
	if d, ok := parseMessage(b); ok {
		return &d.msg, nil
	}
	m := &raftpb.Message{}
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, err
	}
	return m, nil
}

// parseMessage decodes the fields raft's replication messages have; false
// for anything the protobuf library must judge.
func parseMessage(b []byte) (*decodedMessage, bool) {
	d := &decodedMessage{}
	if n := countEntries(b); n > 0 {
		d.entries = make(entryBlock, n)
		d.msg.Entries = make([]*raftpb.Entry, 0, n)
	}
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		switch wt {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 || !d.setScalar(num, v) {
				return nil, false
			}
			b = b[n:]
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || !d.setBytes(num, v[:len(v):len(v)]) {
				return nil, false
			}
			b = b[n:]
		default:
			return nil, false
		}
	}
	return d, true
}

// countEntries counts the entries field in an encoded message; what does
// not parse counts as none (parseMessage then gives up on it anyway).
func countEntries(b []byte) int {
	n := 0
	for len(b) > 0 {
		num, wt, tagLen := protowire.ConsumeTag(b)
		if tagLen < 0 {
			return 0
		}
		valLen := protowire.ConsumeFieldValue(num, wt, b[tagLen:])
		if valLen < 0 {
			return 0
		}
		if num == msgEntriesField && wt == protowire.BytesType {
			n++
		}
		b = b[tagLen+valLen:]
	}
	return n
}

// setScalar stores a varint field; false for a field it does not handle
// or an enum value raftpb does not define.
func (d *decodedMessage) setScalar(num protowire.Number, v uint64) bool {
	m := &d.msg
	switch num {
	case msgTypeField:
		if v > 1<<31-1 {
			return false
		}
		if _, known := raftpb.MessageType_name[int32(v)]; !known {
			return false
		}
		d.typ, m.Type = raftpb.MessageType(v), &d.typ
	case msgToField:
		d.to, m.To = v, &d.to
	case msgFromField:
		d.from, m.From = v, &d.from
	case msgTermField:
		d.term, m.Term = v, &d.term
	case msgLogTermField:
		d.logTerm, m.LogTerm = v, &d.logTerm
	case msgIndexField:
		d.index, m.Index = v, &d.index
	case msgCommitField:
		d.commit, m.Commit = v, &d.commit
	case msgRejectField:
		d.reject, m.Reject = protowire.DecodeBool(v), &d.reject
	case msgRejectHintField:
		d.rejectHint, m.RejectHint = v, &d.rejectHint
	case msgVoteField:
		d.vote, m.Vote = v, &d.vote
	default:
		return false
	}
	return true
}

// setBytes stores an entry or the context; false for any other field.
func (d *decodedMessage) setBytes(num protowire.Number, v []byte) bool {
	switch num {
	case msgEntriesField:
		e := d.entries.take()
		if !e.parse(v) {
			return false
		}
		d.msg.Entries = append(d.msg.Entries, &e.entry)
	case msgContextField:
		d.msg.Context = v
	default:
		return false
	}
	return true
}

// appendMessage appends m as proto.Marshal encodes it, preceded by its
// 8-byte big-endian size (the record of the message stream, and of a
// msgappv2 record that carries a whole message).
func appendMessage(b []byte, m *raftpb.Message) ([]byte, error) {
	if !handEncodable(m) {
		b = appendUint64BE(b, uint64(proto.Size(m)))
		return proto.MarshalOptions{}.MarshalAppend(b, m)
	}
	b = appendUint64BE(b, uint64(messageSize(m)))
	if m.Type != nil {
		b = protofield.AppendVarint(b, msgTypeField, uint64(*m.Type))
	}
	b = appendOptVarint(b, msgToField, m.To)
	b = appendOptVarint(b, msgFromField, m.From)
	b = appendOptVarint(b, msgTermField, m.Term)
	b = appendOptVarint(b, msgLogTermField, m.LogTerm)
	b = appendOptVarint(b, msgIndexField, m.Index)
	for _, e := range m.Entries {
		b = protowire.AppendTag(b, msgEntriesField, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(entrySize(e)))
		b = appendEntryFields(b, e)
	}
	b = appendOptVarint(b, msgCommitField, m.Commit)
	if m.Reject != nil {
		b = protofield.AppendVarint(b, msgRejectField, protowire.EncodeBool(*m.Reject))
	}
	b = appendOptVarint(b, msgRejectHintField, m.RejectHint)
	if m.Context != nil {
		b = protofield.AppendBytes(b, msgContextField, m.Context)
	}
	b = appendOptVarint(b, msgVoteField, m.Vote)
	return b, nil
}

// handEncodable reports whether m has only the fields appendMessage
// writes itself.
func handEncodable(m *raftpb.Message) bool {
	if m.Snapshot != nil || m.Responses != nil || hasUnknown(m) {
		return false
	}
	for _, e := range m.Entries {
		if e == nil || hasUnknown(e) {
			return false
		}
	}
	return true
}

// messageSize is proto.Size(m) for a handEncodable m.
func messageSize(m *raftpb.Message) int {
	n := sizeOptVarint(m.To) + sizeOptVarint(m.From) + sizeOptVarint(m.Term) +
		sizeOptVarint(m.LogTerm) + sizeOptVarint(m.Index) + sizeOptVarint(m.Commit) +
		sizeOptVarint(m.RejectHint) + sizeOptVarint(m.Vote)
	if m.Type != nil {
		n += sizeVarintField(uint64(*m.Type))
	}
	for _, e := range m.Entries {
		n += 1 + protowire.SizeBytes(entrySize(e))
	}
	if m.Reject != nil {
		n += 2
	}
	if m.Context != nil {
		n += 1 + protowire.SizeBytes(len(m.Context))
	}
	return n
}
