package client

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// KV reads and writes keys.
type KV interface {
	// Get reads key, or a range of keys with WithPrefix, WithRange or
	// WithFromKey.
	Get(ctx context.Context, key string, opts ...OpOption) (*GetResponse, error)
	// Put writes val under key.
	Put(ctx context.Context, key, val string, opts ...OpOption) (*PutResponse, error)
	// Delete deletes key, or a range of keys.
	Delete(ctx context.Context, key string, opts ...OpOption) (*DeleteResponse, error)
	// Compact drops the history before revision rev.
	Compact(ctx context.Context, rev int64, opts ...CompactOption) (*CompactResponse, error)
	// Do runs op.
	Do(ctx context.Context, op Op) (OpResponse, error)
	// Txn starts a transaction.
	Txn(ctx context.Context) Txn
}

// OpResponse is the result of Do: exactly one accessor is not nil.
type OpResponse struct {
	get *GetResponse
	put *PutResponse
	del *DeleteResponse
	txn *TxnResponse
}

// Get, Put, Del and Txn return the response of the Op's kind.
func (r OpResponse) Get() *GetResponse    { return r.get }
func (r OpResponse) Put() *PutResponse    { return r.put }
func (r OpResponse) Del() *DeleteResponse { return r.del }
func (r OpResponse) Txn() *TxnResponse    { return r.txn }

// CompactOption changes a Compact request.
type CompactOption func(*pb.CompactionRequest)

// WithCompactPhysical makes Compact return only after the compaction is
// applied to the backend.
func WithCompactPhysical() CompactOption {
	return func(r *pb.CompactionRequest) { r.Physical = true }
}

type kv struct {
	c      *Client
	remote pb.KVClient
}

// NewKV returns the KV API of c.
func NewKV(c *Client) KV { return newKV(c) }

func newKV(c *Client) *kv { return &kv{c: c, remote: pb.NewKVClient(c.conn)} }

func (k *kv) Get(ctx context.Context, key string, opts ...OpOption) (*GetResponse, error) {
	r, err := k.Do(ctx, OpGet(key, opts...))
	return r.get, err
}

func (k *kv) Put(ctx context.Context, key, val string, opts ...OpOption) (*PutResponse, error) {
	r, err := k.Do(ctx, OpPut(key, val, opts...))
	return r.put, err
}

func (k *kv) Delete(ctx context.Context, key string, opts ...OpOption) (*DeleteResponse, error) {
	r, err := k.Do(ctx, OpDelete(key, opts...))
	return r.del, err
}

func (k *kv) Compact(ctx context.Context, rev int64, opts ...CompactOption) (*CompactResponse, error) {
	req := &pb.CompactionRequest{Revision: rev}
	for _, o := range opts {
		o(req)
	}
	resp, err := k.remote.Compact(ctx, req)
	return resp, toErr(ctx, err)
}

func (k *kv) Txn(ctx context.Context) Txn { return &txn{kv: k, ctx: ctx} }

func (k *kv) Do(ctx context.Context, op Op) (OpResponse, error) {
	var r OpResponse
	var err error
	switch op.t {
	case tRange:
		r.get, err = k.remote.Range(ctx, op.rangeRequest())
	case tPut:
		r.put, err = k.remote.Put(ctx, op.putRequest())
	case tDeleteRange:
		r.del, err = k.remote.DeleteRange(ctx, op.deleteRequest())
	case tTxn:
		r.txn, err = k.remote.Txn(ctx, op.txnRequest(), txnPolicy(op)...)
	default:
		panic("client: Op without a kind (build it with OpGet, OpPut, OpDelete or OpTxn)")
	}
	return r, toErr(ctx, err)
}

// txnPolicy makes a read-only Txn repeatable.
func txnPolicy(op Op) []grpc.CallOption {
	if op.readOnly() {
		return []grpc.CallOption{repeatableCall{}}
	}
	return nil
}
