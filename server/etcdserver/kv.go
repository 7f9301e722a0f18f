package etcdserver

import (
	"context"
	"strconv"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/apply"
	"github.com/cairnkv/cairn/server/auth"
	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/metrics"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// kvMember is what KVService needs of the member: the read barrier, the
// proposals and the header of a response.
type kvMember interface {
	// linearizableReadNotify returns once the member has applied everything
	// committed when it was called.
	linearizableReadNotify(ctx context.Context) error
	propose(ctx context.Context, r *pb.InternalRaftRequest) (*apply.Result, error)
	proposeRequest(ctx context.Context, r *pb.InternalRaftRequest) (proto.Message, error)
	// fillHeader completes, in place, the header the applier started.
	fillHeader(h *pb.ResponseHeader)
}

// kvStores are the member's stores as KVService reads them; each call
// holds the store lock while it runs (*stores).
type kvStores interface {
	rangeLocal(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error)
	txnLocal(ctx context.Context, ai auth.AuthInfo, r *pb.TxnRequest) (*pb.TxnResponse, error)
	// quotaAvailable: does r fit the backend quota (ok false: stopped)?
	quotaAvailable(r proto.Message) (fits, ok bool)
	newWatchStream() (mvcc.WatchStream, error)
	keyAt(ctx context.Context, key []byte, rev int64) (*mvccpb.KeyValue, error)
}

// kvAuth is the member's authGate as KVService uses it.
type kvAuth interface {
	authorizedRead(ctx context.Context, check func(auth.AuthInfo) error, read func(auth.AuthInfo) error) error
	rangePermitted(ai auth.AuthInfo, key, end []byte) error
	IsWatchPermitted(ctx context.Context, key, end []byte) error
}

// KVService serves etcd's KV service on a member (writes through raft,
// reads from the local stores after a read barrier unless serializable)
// and the member's side of the Watch service (watch streams on the local
// store, the prev_kv of events, the permission to watch).
type KVService struct {
	self   uint64
	member kvMember
	stores kvStores
	auth   kvAuth
	stop   <-chan struct{}
}

// Range reads locally, after a read barrier unless the request is serializable.
func (k *KVService) Range(ctx context.Context, r *pb.RangeRequest) (resp *pb.RangeResponse, err error) {
	start := time.Now()
	defer func() {
		metrics.RangeSeconds.WithLabelValues(strconv.FormatBool(err == nil)).Observe(time.Since(start).Seconds())
	}()
	if !r.GetSerializable() {
		if err := k.member.linearizableReadNotify(ctx); err != nil {
			return nil, err
		}
	}
	metrics.MVCCRange.Inc()
	check := func(ai auth.AuthInfo) error { return k.auth.rangePermitted(ai, r.Key, r.RangeEnd) }
	return readLocal(ctx, k, check, func(auth.AuthInfo) (*pb.RangeResponse, error) { return k.stores.rangeLocal(ctx, r) })
}

// Put proposes a put.
func (k *KVService) Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	if err := k.checkQuota(ctx, r); err != nil {
		return nil, err
	}
	return proposeAnswer[*pb.PutResponse](ctx, k.member, &pb.InternalRaftRequest{Put: r})
}

// DeleteRange proposes a delete.
func (k *KVService) DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	return proposeAnswer[*pb.DeleteRangeResponse](ctx, k.member, &pb.InternalRaftRequest{DeleteRange: r})
}

// Txn proposes a transaction; one that only reads is served locally after a
// read barrier (or none, when every range in it is serializable).
func (k *KVService) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	if isTxnReadOnly(r) {
		if !isTxnSerializable(r) {
			if err := k.member.linearizableReadNotify(ctx); err != nil {
				return nil, err
			}
		}
		return k.readOnlyTxn(ctx, r)
	}
	if err := k.checkQuota(ctx, r); err != nil {
		return nil, err
	}
	return proposeAnswer[*pb.TxnResponse](ctx, k.member, &pb.InternalRaftRequest{Txn: r})
}

// readOnlyTxn serves a Txn of reads locally; the applier checks the
// sender's permissions as it would in the apply step.
func (k *KVService) readOnlyTxn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	return readLocal(ctx, k, noCheck, func(ai auth.AuthInfo) (*pb.TxnResponse, error) { return k.stores.txnLocal(ctx, ai, r) })
}

// readLocal serves a read from the local stores: check, then read, as the
// sender's auth allows (authorizedRead), and the member completes the
// header of the answer.
func readLocal[T headedAnswer](ctx context.Context, k *KVService, check func(auth.AuthInfo) error, read func(auth.AuthInfo) (T, error)) (T, error) {
	var out T
	err := k.auth.authorizedRead(ctx, check, func(ai auth.AuthInfo) (err error) {
		out, err = read(ai)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	k.member.fillHeader(out.GetHeader())
	return out, nil
}

// Compact proposes a compaction; a physical one waits until the old
// revisions are gone from the backend.
func (k *KVService) Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	res, err := k.member.propose(ctx, &pb.InternalRaftRequest{Compaction: r})
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, res.Err
	}
	if r.GetPhysical() && res.Physc != nil {
		select {
		case <-res.Physc:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-k.stop:
			return nil, errs.ErrStopped
		}
	}
	out := res.Resp.(*pb.CompactionResponse)
	k.member.fillHeader(out.Header)
	return out, nil
}

// checkQuota refuses a write that would take the backend past its quota and
// raises the NOSPACE alarm through raft, as etcd does before proposing.
func (k *KVService) checkQuota(ctx context.Context, r proto.Message) error {
	fits, ok := k.stores.quotaAvailable(r)
	if !ok {
		return errs.ErrStopped
	}
	if fits {
		return nil
	}
	alarm := &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: k.self, Alarm: pb.AlarmType_NOSPACE}
	if _, err := k.member.proposeRequest(ctx, &pb.InternalRaftRequest{Alarm: alarm}); err != nil {
		return err
	}
	return errs.ErrNoSpace
}

func isTxnReadOnly(r *pb.TxnRequest) bool {
	return opsReadOnly(r.GetSuccess()) && opsReadOnly(r.GetFailure())
}

func opsReadOnly(ops []*pb.RequestOp) bool {
	for _, op := range ops {
		switch {
		case op.GetRequestPut() != nil, op.GetRequestDeleteRange() != nil:
			return false
		case op.GetRequestTxn() != nil:
			if !isTxnReadOnly(op.GetRequestTxn()) {
				return false
			}
		}
	}
	return true
}

func isTxnSerializable(r *pb.TxnRequest) bool {
	return opsSerializable(r.GetSuccess()) && opsSerializable(r.GetFailure())
}

// opsSerializable matches etcd: only a branch made purely of serializable
// ranges skips the read barrier.
func opsSerializable(ops []*pb.RequestOp) bool {
	for _, op := range ops {
		if rr := op.GetRequestRange(); rr == nil || !rr.GetSerializable() {
			return false
		}
	}
	return true
}

// NewWatchStream opens a watch stream on the member's store. It is closed
// by the member when the store is replaced or the member stops.
func (k *KVService) NewWatchStream() (mvcc.WatchStream, error) { return k.stores.newWatchStream() }

// KeyAt returns key's KeyValue at revision rev, nil if the key did not
// exist then; errs.ErrCompacted if rev is compacted.
func (k *KVService) KeyAt(ctx context.Context, key []byte, rev int64) (*mvccpb.KeyValue, error) {
	return k.stores.keyAt(ctx, key, rev)
}

// IsWatchPermitted checks that ctx's sender may read the watched range.
func (k *KVService) IsWatchPermitted(ctx context.Context, key, end []byte) error {
	return k.auth.IsWatchPermitted(ctx, key, end)
}
