package main

import (
	"encoding/binary"
	"errors"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// watchEventsResponse is the part of a WatchResponse the watch commands'
// receivers look at. With 100,000 watchers every put is 100,000 responses
// for the load generator to decode; decoding them into the generated
// messages (a header, an event, a key-value and copies of key and value
// each) made it, not the server, the slowest part of the measurement.
// watchCodec fills this instead and keeps nothing of the message.
type watchEventsResponse struct {
	watchID         int64
	canceled        bool
	compactRevision int64
	cancelReason    string
	events          []watchEvent // reused from message to message
}

// watchEvent is what the delivery check needs of one event.
type watchEvent struct {
	typ         mvccpb.Event_EventType
	modRevision int64
	seq         int64 // the value's first 8 bytes, big-endian (the put's sequence number)
	hasSeq      bool  // the value has those 8 bytes
}

// Field numbers of etcd's messages (rpc.proto, kv.proto) the decoder reads.
const (
	respWatchID, respCanceled, respCompactRevision, respCancelReason, respEvents = 2, 4, 5, 6, 11
	eventType, eventKV                                                           = 1, 2
	kvModRevision, kvValue                                                       = 3, 5
)

var errWatchDecode = errors.New("benchmark: malformed WatchResponse")

// watchCodec is gRPC's proto codec, except that it decodes a message into a
// *watchEventsResponse itself.
type watchCodec struct{ encoding.CodecV2 }

func newWatchCodec() watchCodec { return watchCodec{encoding.GetCodecV2(proto.Name)} }

func (c watchCodec) Unmarshal(data mem.BufferSlice, v any) error {
	r, ok := v.(*watchEventsResponse)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	if len(data) == 1 {
		return r.decode(data[0].ReadOnlyData())
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return r.decode(buf.ReadOnlyData())
}

// decode reads b, an encoded WatchResponse, into r.
func (r *watchEventsResponse) decode(b []byte) error {
	*r = watchEventsResponse{events: r.events[:0]}
	return eachField(b, func(num protowire.Number, typ protowire.Type, v uint64, field []byte) error {
		switch {
		case num == respWatchID && typ == protowire.VarintType:
			r.watchID = int64(v)
		case num == respCanceled && typ == protowire.VarintType:
			r.canceled = v != 0
		case num == respCompactRevision && typ == protowire.VarintType:
			r.compactRevision = int64(v)
		case num == respCancelReason && typ == protowire.BytesType:
			r.cancelReason = string(field)
		case num == respEvents && typ == protowire.BytesType:
			ev, err := decodeEvent(field)
			if err != nil {
				return err
			}
			r.events = append(r.events, ev)
		}
		return nil
	})
}

func decodeEvent(b []byte) (watchEvent, error) {
	var ev watchEvent
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v uint64, field []byte) error {
		switch {
		case num == eventType && typ == protowire.VarintType:
			ev.typ = mvccpb.Event_EventType(v)
		case num == eventKV && typ == protowire.BytesType:
			return eachField(field, func(num protowire.Number, typ protowire.Type, v uint64, field []byte) error {
				switch {
				case num == kvModRevision && typ == protowire.VarintType:
					ev.modRevision = int64(v)
				case num == kvValue && typ == protowire.BytesType:
					ev.hasSeq = len(field) >= seqBytes
					if ev.hasSeq {
						ev.seq = int64(binary.BigEndian.Uint64(field))
					}
				}
				return nil
			})
		}
		return nil
	})
	return ev, err
}

// eachField calls f for every field of the message b with its varint
// value (varint fields) or its bytes (length-delimited fields); other wire
// types are skipped.
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, v uint64, field []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errWatchDecode
		}
		b = b[n:]
		var v uint64
		var field []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			field, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return errWatchDecode
		}
		b = b[n:]
		if typ == protowire.VarintType || typ == protowire.BytesType {
			if err := f(num, typ, v, field); err != nil {
				return err
			}
		}
	}
	return nil
}
