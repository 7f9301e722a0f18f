package etcdserver

import (
	"bytes"
	"unicode/utf8"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of the messages decodeCommonRequest reads (etcd's
// raft_internal.proto and rpc.proto).
const (
	internalPutField         = 4
	internalTxnField         = 6
	internalLeaseGrantField  = 8
	internalLeaseRevokeField = 9

	headerUsernameField     = 2
	headerAuthRevisionField = 3

	putKeyField         = 1
	putValueField       = 2
	putLeaseField       = 3
	putPrevKvField      = 4
	putIgnoreValueField = 5
	putIgnoreLeaseField = 6

	txnSuccessField = 2
	txnFailureField = 3

	requestOpPutField = 2

	leaseGrantTTLField = 1
	leaseGrantIDField  = 2
	leaseRevokeIDField = 1
)

// decodeCommonRequest decodes the requests a write load is made of (puts,
// transactions whose operations are all puts, lease grants and revokes)
// without protobuf's reflection, which costs a follower more than applying
// a small put's bookkeeping. The result equals what proto.Unmarshal makes
// of data (checked by the tests). ok is false for anything else: another
// request, a compare, a field proto would merge or keep as unknown, data
// that does not parse; the caller then decodes with proto.
//
// The byte fields view one copy of data, so the request keeps no reference
// to the caller's buffer; each is capped at its own length.
func decodeCommonRequest(data []byte) (r *pb.InternalRaftRequest, ok bool) {
	data = bytes.Clone(data)
	// Every proposal has a header: one allocation holds both.
	mem := &struct {
		r pb.InternalRaftRequest
		h pb.RequestHeader
	}{}
	r = &mem.r
	ok = eachField(data, func(f wireField) bool {
		var decoded bool
		switch {
		case f.is(internalRequestIDField, protowire.VarintType):
			r.ID, decoded = f.varint, true
		case f.is(internalRequestHeaderField, protowire.BytesType) && r.Header == nil:
			r.Header, decoded = &mem.h, decodeRequestHeader(f.bytes, &mem.h)
		case f.is(internalPutField, protowire.BytesType) && r.Put == nil:
			r.Put = &pb.PutRequest{}
			decoded = decodePut(f.bytes, r.Put)
		case f.is(internalTxnField, protowire.BytesType) && r.Txn == nil:
			r.Txn, decoded = decodeTxnOfPuts(f.bytes)
		case f.is(internalLeaseGrantField, protowire.BytesType) && r.LeaseGrant == nil:
			r.LeaseGrant, decoded = decodeLeaseGrant(f.bytes)
		case f.is(internalLeaseRevokeField, protowire.BytesType) && r.LeaseRevoke == nil:
			r.LeaseRevoke, decoded = decodeLeaseRevoke(f.bytes)
		}
		return decoded
	})
	if !ok {
		return nil, false
	}
	return r, true
}

// wireField is one varint or length-delimited field of an encoded message.
type wireField struct {
	num    protowire.Number
	typ    protowire.Type
	varint uint64 // a varint field's value
	bytes  []byte // a length-delimited field's content, capped
}

func (f wireField) is(num protowire.Number, typ protowire.Type) bool {
	return f.num == num && f.typ == typ
}

// bytesValue is a bytes field as proto.Unmarshal sets it: nil when empty.
func (f wireField) bytesValue() []byte {
	if len(f.bytes) == 0 {
		return nil
	}
	return f.bytes
}

// eachField calls visit for each field of the encoded message b until visit
// returns false; it reports false then, or when a field does not parse or
// has a wire type other than varint and bytes (none of the decoded
// messages has one).
func eachField(b []byte, visit func(wireField) bool) bool {
	for len(b) > 0 {
		f, n := nextField(b)
		if n < 0 || !visit(f) {
			return false
		}
		b = b[n:]
	}
	return true
}

// nextField reads the field at the start of b and its length; n < 0 when
// it does not parse or is neither varint nor bytes.
func nextField(b []byte) (f wireField, n int) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return f, -1
	}
	f.num, f.typ = num, typ
	switch typ {
	case protowire.VarintType:
		v, m := protowire.ConsumeVarint(b[n:])
		if m < 0 {
			return f, -1
		}
		f.varint = v
		return f, n + m
	case protowire.BytesType:
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return f, -1
		}
		f.bytes = v[:len(v):len(v)]
		return f, n + m
	}
	return f, -1
}

func decodeRequestHeader(b []byte, h *pb.RequestHeader) bool {
	return eachField(b, func(f wireField) bool {
		switch {
		case f.is(requestHeaderIDField, protowire.VarintType):
			h.ID = f.varint
		case f.is(headerUsernameField, protowire.BytesType) && utf8.Valid(f.bytes):
			h.Username = string(f.bytes)
		case f.is(headerAuthRevisionField, protowire.VarintType):
			h.AuthRevision = f.varint
		default:
			return false
		}
		return true
	})
}

func decodePut(b []byte, p *pb.PutRequest) bool {
	return eachField(b, func(f wireField) bool {
		switch {
		case f.is(putKeyField, protowire.BytesType):
			p.Key = f.bytesValue()
		case f.is(putValueField, protowire.BytesType):
			p.Value = f.bytesValue()
		case f.is(putLeaseField, protowire.VarintType):
			p.Lease = int64(f.varint)
		case f.is(putPrevKvField, protowire.VarintType):
			p.PrevKv = f.varint != 0
		case f.is(putIgnoreValueField, protowire.VarintType):
			p.IgnoreValue = f.varint != 0
		case f.is(putIgnoreLeaseField, protowire.VarintType):
			p.IgnoreLease = f.varint != 0
		default:
			return false
		}
		return true
	})
}

// putOp is the memory of one put operation of a Txn; a Txn's are
// allocated together.
type putOp struct {
	op  pb.RequestOp
	req pb.RequestOp_RequestPut
	put pb.PutRequest
}

// decodeTxnOfPuts decodes a transaction without compares whose operations
// are all puts.
func decodeTxnOfPuts(b []byte) (*pb.TxnRequest, bool) {
	var success, failure int
	counted := eachField(b, func(f wireField) bool {
		switch {
		case f.is(txnSuccessField, protowire.BytesType):
			success++
		case f.is(txnFailureField, protowire.BytesType):
			failure++
		default:
			return false
		}
		return true
	})
	if !counted {
		return nil, false
	}
	t := &pb.TxnRequest{}
	if success > 0 {
		t.Success = make([]*pb.RequestOp, 0, success)
	}
	if failure > 0 {
		t.Failure = make([]*pb.RequestOp, 0, failure)
	}
	mem := make([]putOp, success+failure)
	ok := eachField(b, func(f wireField) bool {
		m := &mem[len(t.Success)+len(t.Failure)]
		if !decodePutOp(f.bytes, m) {
			return false
		}
		if f.num == txnSuccessField {
			t.Success = append(t.Success, &m.op)
		} else {
			t.Failure = append(t.Failure, &m.op)
		}
		return true
	})
	return t, ok
}

// decodePutOp decodes a RequestOp that holds exactly one put into m.
func decodePutOp(b []byte, m *putOp) bool {
	f, n := nextField(b)
	if n != len(b) || !f.is(requestOpPutField, protowire.BytesType) {
		return false
	}
	m.req.RequestPut = &m.put
	m.op.Request = &m.req
	return decodePut(f.bytes, &m.put)
}

func decodeLeaseGrant(b []byte) (*pb.LeaseGrantRequest, bool) {
	g := &pb.LeaseGrantRequest{}
	ok := eachField(b, func(f wireField) bool {
		switch {
		case f.is(leaseGrantTTLField, protowire.VarintType):
			g.TTL = int64(f.varint)
		case f.is(leaseGrantIDField, protowire.VarintType):
			g.ID = int64(f.varint)
		default:
			return false
		}
		return true
	})
	return g, ok
}

func decodeLeaseRevoke(b []byte) (*pb.LeaseRevokeRequest, bool) {
	r := &pb.LeaseRevokeRequest{}
	ok := eachField(b, func(f wireField) bool {
		if !f.is(leaseRevokeIDField, protowire.VarintType) {
			return false
		}
		r.ID = int64(f.varint)
		return true
	})
	return r, ok
}
