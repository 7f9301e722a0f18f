package mvcc

import (
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of mvccpb.KeyValue.
const (
	kvKeyField            = 1
	kvCreateRevisionField = 2
	kvModRevisionField    = 3
	kvVersionField        = 4
	kvValueField          = 5
	kvLeaseField          = 6
)

// encodeRevision returns the key-bucket key of rev and the stored form of
// kv, both in one allocation: a put costs one buffer instead of two plus
// protobuf's reflection. The value is byte for byte what proto.Marshal
// makes of kv (checked by the tests), so the db file stays etcd's.
func encodeRevision(rev Revision, kv *mvccpb.KeyValue) (revKey, value []byte) {
	buf := make([]byte, 0, revBytesLen+keyValueSize(kv))
	buf = appendRevBytes(buf, rev, false)
	// Capped, so that nothing appending to the key can reach the value.
	return buf[:revBytesLen:revBytesLen], appendKeyValue(buf[revBytesLen:], kv)
}

// keyValueSize is the length of appendKeyValue's encoding of kv.
func keyValueSize(kv *mvccpb.KeyValue) int {
	return bytesFieldSize(kvKeyField, kv.Key) +
		varintFieldSize(kvCreateRevisionField, kv.CreateRevision) +
		varintFieldSize(kvModRevisionField, kv.ModRevision) +
		varintFieldSize(kvVersionField, kv.Version) +
		bytesFieldSize(kvValueField, kv.Value) +
		varintFieldSize(kvLeaseField, kv.Lease)
}

// appendKeyValue appends kv's proto3 encoding to b: fields in number order,
// zero values left out, as proto.Marshal writes a KeyValue without unknown
// fields.
func appendKeyValue(b []byte, kv *mvccpb.KeyValue) []byte {
	b = appendBytesField(b, kvKeyField, kv.Key)
	b = appendVarintField(b, kvCreateRevisionField, kv.CreateRevision)
	b = appendVarintField(b, kvModRevisionField, kv.ModRevision)
	b = appendVarintField(b, kvVersionField, kv.Version)
	b = appendBytesField(b, kvValueField, kv.Value)
	return appendVarintField(b, kvLeaseField, kv.Lease)
}

func appendBytesField(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendVarintField(b []byte, num protowire.Number, v int64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

func bytesFieldSize(num protowire.Number, v []byte) int {
	if len(v) == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(len(v))
}

func varintFieldSize(num protowire.Number, v int64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(uint64(v))
}
