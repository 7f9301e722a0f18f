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
	return withHeader(ks.s, ks.kv.Range, ctx, r)
}

func (ks *kvServer) Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	if err := putFlaws(r); err != nil {
		return nil, err
	}
	return withHeader(ks.s, ks.kv.Put, ctx, r)
}

func (ks *kvServer) DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	if err := deleteFlaws(r); err != nil {
		return nil, err
	}
	return withHeader(ks.s, ks.kv.DeleteRange, ctx, r)
}

func (ks *kvServer) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	if err := txnFlaws(r, ks.maxTxnOps); err != nil {
		return nil, err
	}
	if err := checkTxnDuplicates(r); err != nil {
		return nil, err
	}
	return withHeader(ks.s, ks.kv.Txn, ctx, r)
}

func (ks *kvServer) Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	return withHeader(ks.s, ks.kv.Compact, ctx, r)
}
