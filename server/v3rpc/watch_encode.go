package v3rpc

import (
	"encoding/binary"
	"slices"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	gproto "google.golang.org/protobuf/proto"
)

// Field numbers of WatchResponse that an event response carries.
const (
	watchHeaderField = 1
	watchIDField     = 2
)

// encodedWatchResponse is a WatchResponse in its wire form. Every watcher
// of a stream that gets a revision's events receives the same header and
// events: only the watch ID differs. Encoding those once per stream and
// revision instead of once per watcher is most of what a fan-out to many
// watchers costs beyond gRPC's own framing.
type encodedWatchResponse struct {
	parts [3]mem.Buffer                   // header, watch ID, events; shared parts are read-only
	id    [1 + binary.MaxVarintLen64]byte // tag of field 2, then the ID
	size  int
}

// buffers is the message as watchCodec hands it to gRPC.
func (e *encodedWatchResponse) buffers() mem.BufferSlice { return e.parts[:] }

// watchCodec is gRPC's proto codec that passes encodedWatchResponses through
// as they are.
type watchCodec struct{ encoding.CodecV2 }

func newWatchCodec() watchCodec { return watchCodec{encoding.GetCodecV2(proto.Name)} }

func (c watchCodec) Marshal(v any) (mem.BufferSlice, error) {
	if e, ok := v.(*encodedWatchResponse); ok {
		return e.buffers(), nil
	}
	return c.CodecV2.Marshal(v)
}

// watchEncoder keeps a stream's most recent encoded header and events. A
// new pair is allocated whenever they change, never overwritten, because
// gRPC may still hold responses that share the old one.
type watchEncoder struct {
	header    mem.Buffer // the header field of headerRev's responses; nil: none
	headerRev int64
	events    []*mvccpb.Event // the events eventsBuf encodes, compared by identity
	eventsBuf mem.Buffer      // nil: none yet
}

// encode returns the event response of watcher id at rev with evs; header
// gives the member's header of a revision when the cached one is not it.
func (e *watchEncoder) encode(id, rev int64, evs []*mvccpb.Event, header func(int64) *pb.ResponseHeader) (*encodedWatchResponse, error) {
	if e.header == nil || e.headerRev != rev {
		b, err := appendMessageField(nil, watchHeaderField, header(rev))
		if err != nil {
			return nil, err
		}
		// Boxed once: turning a slice into an interface allocates.
		e.header, e.headerRev = mem.SliceBuffer(b), rev
	}
	if e.eventsBuf == nil || !slices.Equal(e.events, evs) {
		var b []byte
		for _, ev := range evs {
			var err error
			if b, err = appendMessageField(b, watchEventsField, ev); err != nil {
				return nil, err
			}
		}
		e.events, e.eventsBuf = slices.Clone(evs), mem.SliceBuffer(b)
	}
	r := &encodedWatchResponse{}
	n := 0
	if id != 0 { // proto3 leaves a zero field out
		n = len(protowire.AppendVarint(protowire.AppendTag(r.id[:0], watchIDField, protowire.VarintType), uint64(id)))
	}
	r.parts = [3]mem.Buffer{e.header, mem.SliceBuffer(r.id[:n]), e.eventsBuf}
	r.size = e.header.Len() + n + e.eventsBuf.Len()
	return r, nil
}

// forgetHeader drops the cached header, so the next response reads the
// member's (its raft term may have changed since).
func (e *watchEncoder) forgetHeader() { e.header = nil }

// appendMessageField appends m as field num of a message.
func appendMessageField(b []byte, num protowire.Number, m gproto.Message) ([]byte, error) {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(gproto.Size(m)))
	return gproto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, m)
}
