package v3rpc

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// KVServer is what the KV service needs from a member
// (etcdserver.KVService); Config.KV names it, and without it the service
// is not registered.
type KVServer interface {
	Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error)
	Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error)
	DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error)
	Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error)
	Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error)
}

// kvServer serves etcd's KV service. Errors go back unmapped: the error
// interceptor maps them.
type kvServer struct {
	pb.UnimplementedKVServer
	s               Server   // the headers
	kv              KVServer // the requests
	maxTxnOps       int
	maxRequestBytes int // paces RangeStream's target-sorted pages, as etcd's
}

func newKVServer(s Server, kv KVServer, maxTxnOps, maxRequestBytes int) *kvServer {
	return &kvServer{s: s, kv: kv, maxTxnOps: maxTxnOps, maxRequestBytes: maxRequestBytes}
}

func (ks *kvServer) Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	if err := rangeFlaws(r); err != nil {
		return nil, err
	}
	resp, err := ks.kv.Range(ctx, r)
	if err != nil {
		return nil, err
	}
	resp.Header = completeHeader(ks.s, resp.Header)
	return resp, nil
}

func (ks *kvServer) Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	if err := putFlaws(r); err != nil {
		return nil, err
	}
	resp, err := ks.kv.Put(ctx, r)
	if err != nil {
		return nil, err
	}
	resp.Header = completeHeader(ks.s, resp.Header)
	return resp, nil
}

func (ks *kvServer) DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	if err := deleteFlaws(r); err != nil {
		return nil, err
	}
	resp, err := ks.kv.DeleteRange(ctx, r)
	if err != nil {
		return nil, err
	}
	resp.Header = completeHeader(ks.s, resp.Header)
	return resp, nil
}

func (ks *kvServer) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	if err := txnFlaws(r, ks.maxTxnOps); err != nil {
		return nil, err
	}
	if err := checkTxnDuplicates(r); err != nil {
		return nil, err
	}
	resp, err := ks.kv.Txn(ctx, r)
	if err != nil {
		return nil, err
	}
	resp.Header = completeHeader(ks.s, resp.Header)
	return resp, nil
}

func (ks *kvServer) Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	resp, err := ks.kv.Compact(ctx, r)
	if err != nil {
		return nil, err
	}
	resp.Header = completeHeader(ks.s, resp.Header)
	return resp, nil
}

// completeHeader returns h with every field the member left zero taken from
// the member's current header (a new header when h is nil). The member sets
// the revision a response was served at; the layer only adds the identity
// and term, and the current revision where the member had none to report.
func completeHeader(s Server, h *pb.ResponseHeader) *pb.ResponseHeader {
	if h == nil {
		h = &pb.ResponseHeader{}
	}
	if h.ClusterId != 0 && h.MemberId != 0 && h.Revision != 0 && h.RaftTerm != 0 {
		return h
	}
	current := s.Header()
	if current == nil {
		return h
	}
	if h.ClusterId == 0 {
		h.ClusterId = current.ClusterId
	}
	if h.MemberId == 0 {
		h.MemberId = current.MemberId
	}
	if h.Revision == 0 {
		h.Revision = current.Revision
	}
	if h.RaftTerm == 0 {
		h.RaftTerm = current.RaftTerm
	}
	return h
}
