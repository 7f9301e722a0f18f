package peer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Size limits for what a remote may ask us to read.
const (
	// maxStreamMessageBytes bounds one message on a stream or in a pipeline
	// request (etcd uses the same 512 MB).
	maxStreamMessageBytes = 512 << 20
	// maxSnapshotMessageBytes bounds the raft message that heads a snapshot
	// upload; the database after it is unbounded.
	maxSnapshotMessageBytes = 64 << 20
	// maxPreallocBytes caps what is allocated on the word of a length
	// prefix before the bytes have actually arrived.
	maxPreallocBytes = 64 << 10
)

// errTooLarge is returned when a length prefix exceeds the reader's limit.
var errTooLarge = errors.New("peer: message exceeds size limit")

// msgappv2 record types (the first byte of every record).
const (
	msgAppV2LinkHeartbeat byte = 0
	msgAppV2AppEntries    byte = 1
	msgAppV2App           byte = 2
)

// encoder writes raft messages in one stream format.
type encoder interface {
	encode(m *raftpb.Message) error
}

// decoder reads raft messages in one stream format.
type decoder interface {
	decode() (*raftpb.Message, error)
}

// linkHeartbeat is written on an idle stream to keep it alive; it is a
// MsgHeartbeat without sender or receiver and is never handed to raft.
func linkHeartbeat() *raftpb.Message {
	return &raftpb.Message{Type: raftpb.MsgHeartbeat.Enum()}
}

func isLinkHeartbeat(m *raftpb.Message) bool {
	return m.GetType() == raftpb.MsgHeartbeat && m.GetFrom() == 0 && m.GetTo() == 0
}

// messageEncoder writes the "message" stream format, also used for the
// head of a snapshot upload: an 8-byte big-endian length, then the
// marshaled raftpb.Message.
type messageEncoder struct {
	w       io.Writer
	scratch []byte
}

func (e *messageEncoder) encode(m *raftpb.Message) error {
	b, err := appendMessage(e.scratch[:0], m)
	if err != nil {
		return err
	}
	e.scratch = keepScratch(b)
	_, err = e.w.Write(b)
	return err
}

// maxKeptScratch bounds the encoding buffer an encoder keeps for the next
// record, so that one large append does not pin its size.
const maxKeptScratch = 1 << 20

func keepScratch(b []byte) []byte {
	if cap(b) > maxKeptScratch {
		return nil
	}
	return b[:0]
}

// marshalWithLength returns m in the message stream format.
func marshalWithLength(m *raftpb.Message) ([]byte, error) {
	return appendMessage(nil, m)
}

// messageDecoder reads the "message" stream format.
type messageDecoder struct {
	r     io.Reader
	limit uint64
}

func (d *messageDecoder) decode() (*raftpb.Message, error) {
	b, err := readFrame(d.r, d.limit)
	if err != nil {
		return nil, err
	}
	return unmarshalMessage(b)
}

// msgAppV2Encoder writes the msgappv2 stream format. Both ends track the
// term and index the last MsgApp left the follower's log at; a MsgApp that
// continues exactly from there in the same term is sent as an
// "append entries" record without its header fields:
//
//	0                                 link heartbeat
//	1 count(8) {size(8) entry}* commit(8)   continuation MsgApp
//	2 size(8) message                 any other message, resets the state
//
// All integers are big-endian.
type msgAppV2Encoder struct {
	w           io.Writer
	term, index uint64
	scratch     []byte
}

func newMsgAppV2Encoder(w io.Writer) *msgAppV2Encoder {
	return &msgAppV2Encoder{w: w}
}

func (e *msgAppV2Encoder) encode(m *raftpb.Message) error {
	switch {
	case isLinkHeartbeat(m):
		e.scratch = append(e.scratch[:0], msgAppV2LinkHeartbeat)
	case e.continues(m):
		if err := e.appendEntries(m); err != nil {
			return err
		}
	default:
		if err := e.appendFull(m); err != nil {
			return err
		}
	}
	_, err := e.w.Write(e.scratch)
	e.scratch = keepScratch(e.scratch)
	return err
}

// continues reports whether m can be sent as an append-entries record.
// etcd's own encoder does not look at the type because it only ever sees
// MsgApp here; the extra check keeps other messages intact and does not
// change what the decoder sees.
func (e *msgAppV2Encoder) continues(m *raftpb.Message) bool {
	return m.GetType() == raftpb.MsgApp && e.index == m.GetIndex() &&
		e.term == m.GetLogTerm() && m.GetLogTerm() == m.GetTerm()
}

func (e *msgAppV2Encoder) appendEntries(m *raftpb.Message) error {
	b := append(e.scratch[:0], msgAppV2AppEntries)
	b = binary.BigEndian.AppendUint64(b, uint64(len(m.GetEntries())))
	var err error
	for _, ent := range m.GetEntries() {
		if b, err = appendEntry(b, ent); err != nil {
			return err
		}
		e.index++
	}
	e.scratch = binary.BigEndian.AppendUint64(b, m.GetCommit())
	return nil
}

func (e *msgAppV2Encoder) appendFull(m *raftpb.Message) error {
	b, err := appendMessage(append(e.scratch[:0], msgAppV2App), m)
	if err != nil {
		return err
	}
	e.scratch = b
	e.term, e.index = m.GetTerm(), lastIndex(m)
	return nil
}

// lastIndex is the index the follower's log ends at once m is appended.
func lastIndex(m *raftpb.Message) uint64 {
	if ents := m.GetEntries(); len(ents) > 0 {
		return ents[len(ents)-1].GetIndex()
	}
	return m.GetIndex()
}

// msgAppV2Decoder reads the msgappv2 stream format; local and remote fill
// the To and From of append-entries records.
type msgAppV2Decoder struct {
	r             io.Reader
	local, remote uint64
	term, index   uint64
}

func newMsgAppV2Decoder(r io.Reader, local, remote uint64) *msgAppV2Decoder {
	return &msgAppV2Decoder{r: r, local: local, remote: remote}
}

func (d *msgAppV2Decoder) decode() (*raftpb.Message, error) {
	var typ [1]byte
	if _, err := io.ReadFull(d.r, typ[:]); err != nil {
		return nil, err
	}
	switch typ[0] {
	case msgAppV2LinkHeartbeat:
		return linkHeartbeat(), nil
	case msgAppV2AppEntries:
		return d.decodeAppEntries()
	case msgAppV2App:
		return d.decodeFull()
	default:
		return nil, fmt.Errorf("failed to parse type %d in msgappv2 stream", typ[0])
	}
}

func (d *msgAppV2Decoder) decodeAppEntries() (*raftpb.Message, error) {
	m := newContinuation(d.remote, d.local, d.term, d.index)
	count, err := readUint64(d.r)
	if err != nil {
		return nil, err
	}
	n := min(count, 1024) // the count is the remote's word: allocate as entries arrive
	m.Entries = make([]*raftpb.Entry, 0, n)
	blk := make(entryBlock, n)
	for range count {
		ent, err := d.decodeEntry(blk.take())
		if err != nil {
			return nil, err
		}
		m.Entries = append(m.Entries, ent)
		d.index++
	}
	commit, err := readUint64(d.r)
	if err != nil {
		return nil, err
	}
	m.Commit = proto.Uint64(commit)
	return m, nil
}

func (d *msgAppV2Decoder) decodeEntry(into *decodedEntry) (*raftpb.Entry, error) {
	b, err := readFrame(d.r, maxStreamMessageBytes)
	if err != nil {
		return nil, err
	}
	return into.unmarshal(b)
}

func (d *msgAppV2Decoder) decodeFull() (*raftpb.Message, error) {
	m, err := (&messageDecoder{r: d.r, limit: maxStreamMessageBytes}).decode()
	if err != nil {
		return nil, err
	}
	d.term, d.index = m.GetTerm(), lastIndex(m)
	return m, nil
}

func readUint64(r io.Reader) (uint64, error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(b[:]), nil
}

// readFrame reads one length-prefixed record, the unit of both stream
// formats, refusing a length above limit.
func readFrame(r io.Reader, limit uint64) ([]byte, error) {
	n, err := readUint64(r)
	if err != nil {
		return nil, err
	}
	return readBytes(r, n, limit)
}

// readBytes reads exactly n bytes, refusing n above limit and growing the
// buffer as bytes arrive rather than trusting the length prefix.
func readBytes(r io.Reader, n, limit uint64) ([]byte, error) {
	if n > limit {
		return nil, errTooLarge
	}
	if n <= maxPreallocBytes {
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, unexpectedEOF(err)
	}
	var buf bytes.Buffer
	buf.Grow(maxPreallocBytes)
	got, err := io.CopyN(&buf, r, int64(n))
	if err == io.EOF && uint64(got) < n {
		err = io.ErrUnexpectedEOF
	}
	return buf.Bytes(), err
}

// unexpectedEOF turns a clean EOF in the middle of a record into
// io.ErrUnexpectedEOF (a zero-length record cannot hit EOF).
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
