package etcdserver

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// marshalRequest encodes a proposal: by hand when it is a common one, else
// with proto.
func marshalRequest(r *pb.InternalRaftRequest) ([]byte, error) {
	if data, ok := encodeCommonRequest(r); ok {
		return data, nil
	}
	return proto.Marshal(r)
}

// encodeCommonRequest encodes the requests a write load proposes (puts,
// transactions without compares whose operations are all puts, lease
// grants and revokes) without protobuf's reflection. The bytes are what
// proto.Marshal writes: fields in number order, zero values left out
// (checked by the tests). ok is false for any other request, or one that
// carries unknown fields; the caller then marshals with proto.
func encodeCommonRequest(r *pb.InternalRaftRequest) (data []byte, ok bool) {
	if !hasOnlyCommonFields(r) {
		return nil, false
	}
	b := make([]byte, 0, internalRequestSize(r))
	b = appendVarintField(b, internalRequestIDField, r.ID)
	if r.Put != nil {
		b = appendMessageHeader(b, internalPutField, putSize(r.Put))
		b = appendPut(b, r.Put)
	}
	if r.Txn != nil {
		b = appendMessageHeader(b, internalTxnField, txnSize(r.Txn))
		b = appendTxn(b, r.Txn)
	}
	if g := r.LeaseGrant; g != nil {
		b = appendMessageHeader(b, internalLeaseGrantField, leaseGrantSize(g))
		b = appendVarintField(b, leaseGrantTTLField, uint64(g.TTL))
		b = appendVarintField(b, leaseGrantIDField, uint64(g.ID))
	}
	if rv := r.LeaseRevoke; rv != nil {
		b = appendMessageHeader(b, internalLeaseRevokeField, varintFieldSize(leaseRevokeIDField, uint64(rv.ID)))
		b = appendVarintField(b, leaseRevokeIDField, uint64(rv.ID))
	}
	if h := r.Header; h != nil {
		b = appendMessageHeader(b, internalRequestHeaderField, headerSize(h))
		b = appendVarintField(b, requestHeaderIDField, h.ID)
		b = appendBytesField(b, headerUsernameField, h.Username)
		b = appendVarintField(b, headerAuthRevisionField, h.AuthRevision)
	}
	return b, true
}

// hasOnlyCommonFields reports whether r sets no field but those
// encodeCommonRequest writes, and no message of it has unknown fields.
func hasOnlyCommonFields(r *pb.InternalRaftRequest) bool {
	if r.Range != nil || r.DeleteRange != nil || r.Compaction != nil || r.Alarm != nil ||
		r.LeaseCheckpoint != nil || r.AuthEnable != nil || r.AuthDisable != nil || r.AuthStatus != nil ||
		r.Authenticate != nil || r.AuthUserAdd != nil || r.AuthUserDelete != nil || r.AuthUserGet != nil ||
		r.AuthUserChangePassword != nil || r.AuthUserGrantRole != nil || r.AuthUserRevokeRole != nil ||
		r.AuthUserList != nil || r.AuthRoleList != nil || r.AuthRoleAdd != nil || r.AuthRoleDelete != nil ||
		r.AuthRoleGet != nil || r.AuthRoleGrantPermission != nil || r.AuthRoleRevokePermission != nil ||
		r.ClusterVersionSet != nil || r.ClusterMemberAttrSet != nil || r.DowngradeInfoSet != nil ||
		r.DowngradeVersionTest != nil {
		return false
	}
	if hasUnknown(r) || (r.Header != nil && hasUnknown(r.Header)) ||
		(r.LeaseGrant != nil && hasUnknown(r.LeaseGrant)) || (r.LeaseRevoke != nil && hasUnknown(r.LeaseRevoke)) {
		return false
	}
	if r.Put != nil && hasUnknown(r.Put) {
		return false
	}
	return r.Txn == nil || isTxnOfPuts(r.Txn)
}

func hasUnknown(m proto.Message) bool { return len(m.ProtoReflect().GetUnknown()) > 0 }

// isTxnOfPuts: no compares, every operation a put, no unknown fields.
func isTxnOfPuts(t *pb.TxnRequest) bool {
	if len(t.Compare) > 0 || hasUnknown(t) {
		return false
	}
	for _, ops := range [2][]*pb.RequestOp{t.Success, t.Failure} {
		for _, op := range ops {
			if op.GetRequestPut() == nil || hasUnknown(op) || hasUnknown(op.GetRequestPut()) {
				return false
			}
		}
	}
	return true
}

func internalRequestSize(r *pb.InternalRaftRequest) int {
	n := varintFieldSize(internalRequestIDField, r.ID)
	if r.Put != nil {
		n += messageFieldSize(internalPutField, putSize(r.Put))
	}
	if r.Txn != nil {
		n += messageFieldSize(internalTxnField, txnSize(r.Txn))
	}
	if r.LeaseGrant != nil {
		n += messageFieldSize(internalLeaseGrantField, leaseGrantSize(r.LeaseGrant))
	}
	if r.LeaseRevoke != nil {
		n += messageFieldSize(internalLeaseRevokeField, varintFieldSize(leaseRevokeIDField, uint64(r.LeaseRevoke.ID)))
	}
	if r.Header != nil {
		n += messageFieldSize(internalRequestHeaderField, headerSize(r.Header))
	}
	return n
}

func headerSize(h *pb.RequestHeader) int {
	return varintFieldSize(requestHeaderIDField, h.ID) + bytesFieldSize(headerUsernameField, len(h.Username)) +
		varintFieldSize(headerAuthRevisionField, h.AuthRevision)
}

func leaseGrantSize(g *pb.LeaseGrantRequest) int {
	return varintFieldSize(leaseGrantTTLField, uint64(g.TTL)) + varintFieldSize(leaseGrantIDField, uint64(g.ID))
}

func putSize(p *pb.PutRequest) int {
	return bytesFieldSize(putKeyField, len(p.Key)) + bytesFieldSize(putValueField, len(p.Value)) +
		varintFieldSize(putLeaseField, uint64(p.Lease)) + boolFieldSize(putPrevKvField, p.PrevKv) +
		boolFieldSize(putIgnoreValueField, p.IgnoreValue) + boolFieldSize(putIgnoreLeaseField, p.IgnoreLease)
}

func appendPut(b []byte, p *pb.PutRequest) []byte {
	b = appendBytesField(b, putKeyField, p.Key)
	b = appendBytesField(b, putValueField, p.Value)
	b = appendVarintField(b, putLeaseField, uint64(p.Lease))
	b = appendBoolField(b, putPrevKvField, p.PrevKv)
	b = appendBoolField(b, putIgnoreValueField, p.IgnoreValue)
	return appendBoolField(b, putIgnoreLeaseField, p.IgnoreLease)
}

// putOpSize is the size of a RequestOp holding a put of putSize n.
func putOpSize(n int) int { return messageFieldSize(requestOpPutField, n) }

// txnBranches lists a Txn's operations by the field they are encoded in.
func txnBranches(t *pb.TxnRequest) [2]txnBranch {
	return [2]txnBranch{{txnSuccessField, t.Success}, {txnFailureField, t.Failure}}
}

type txnBranch struct {
	num protowire.Number
	ops []*pb.RequestOp
}

func txnSize(t *pb.TxnRequest) int {
	n := 0
	for _, br := range txnBranches(t) {
		for _, op := range br.ops {
			n += messageFieldSize(br.num, putOpSize(putSize(op.GetRequestPut())))
		}
	}
	return n
}

func appendTxn(b []byte, t *pb.TxnRequest) []byte {
	for _, br := range txnBranches(t) {
		for _, op := range br.ops {
			p := op.GetRequestPut()
			n := putSize(p)
			b = appendMessageHeader(b, br.num, putOpSize(n))
			b = appendMessageHeader(b, requestOpPutField, n)
			b = appendPut(b, p)
		}
	}
	return b
}

// The field helpers write nothing for a zero value, as proto3 does.

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

func appendBoolField(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), 1)
}

func appendBytesField[T []byte | string](b []byte, num protowire.Number, v T) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendVarint(protowire.AppendTag(b, num, protowire.BytesType), uint64(len(v)))
	return append(b, v...)
}

// appendMessageHeader writes the tag and length of an embedded message of
// size n, which proto writes even when n is 0.
func appendMessageHeader(b []byte, num protowire.Number, n int) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.BytesType), uint64(n))
}

func varintFieldSize(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

func boolFieldSize(num protowire.Number, v bool) int {
	if !v {
		return 0
	}
	return protowire.SizeTag(num) + 1
}

func bytesFieldSize(num protowire.Number, n int) int {
	if n == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

func messageFieldSize(num protowire.Number, n int) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}
