package etcdserver

import (
	"context"
	"strconv"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/auth"
	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/metrics"
)

// Range reads locally, after a read barrier unless the request is serializable.
func (s *Server) Range(ctx context.Context, r *pb.RangeRequest) (resp *pb.RangeResponse, err error) {
	start := time.Now()
	defer func() {
		metrics.RangeSeconds.WithLabelValues(strconv.FormatBool(err == nil)).Observe(time.Since(start).Seconds())
	}()
	if !r.GetSerializable() {
		if err := s.linearizableReadNotify(ctx); err != nil {
			return nil, err
		}
	}
	metrics.MVCCRange.Inc()
	check := func(ai auth.AuthInfo) error { return s.authStore.IsRangePermitted(ai, r.Key, r.RangeEnd) }
	err = s.gate.authorizedRead(ctx, check, func(auth.AuthInfo) (err error) {
		if !s.rlockStores() {
			return errs.ErrStopped
		}
		defer s.storeMu.RUnlock()
		resp, err = s.applier.Range(ctx, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.fillHeader(&resp.Header)
	return resp, nil
}

// Put proposes a put.
func (s *Server) Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	if err := s.checkQuota(ctx, r); err != nil {
		return nil, err
	}
	resp, err := s.proposeRequest(ctx, &pb.InternalRaftRequest{Put: r})
	if err != nil {
		return nil, err
	}
	out := resp.(*pb.PutResponse)
	s.fillHeader(&out.Header)
	return out, nil
}

// DeleteRange proposes a delete.
func (s *Server) DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	resp, err := s.proposeRequest(ctx, &pb.InternalRaftRequest{DeleteRange: r})
	if err != nil {
		return nil, err
	}
	out := resp.(*pb.DeleteRangeResponse)
	s.fillHeader(&out.Header)
	return out, nil
}

// Txn proposes a transaction; one that only reads is served locally after a
// read barrier (or none, when every range in it is serializable).
func (s *Server) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	if isTxnReadOnly(r) {
		if !isTxnSerializable(r) {
			if err := s.linearizableReadNotify(ctx); err != nil {
				return nil, err
			}
		}
		return s.readOnlyTxn(ctx, r)
	}
	if err := s.checkQuota(ctx, r); err != nil {
		return nil, err
	}
	resp, err := s.proposeRequest(ctx, &pb.InternalRaftRequest{Txn: r})
	if err != nil {
		return nil, err
	}
	out := resp.(*pb.TxnResponse)
	s.fillHeader(&out.Header)
	return out, nil
}

// readOnlyTxn serves a Txn of reads locally; the applier checks the
// sender's permissions as it would in the apply step.
func (s *Server) readOnlyTxn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	var out *pb.TxnResponse
	err := s.gate.authorizedRead(ctx, noCheck, func(ai auth.AuthInfo) error {
		if !s.rlockStores() {
			return errs.ErrStopped
		}
		defer s.storeMu.RUnlock()
		h := &pb.RequestHeader{Username: ai.Username, AuthRevision: ai.Revision}
		res := s.applier.Apply(ctx, &pb.InternalRaftRequest{Header: h, Txn: r})
		if res.Err != nil {
			return res.Err
		}
		out = res.Resp.(*pb.TxnResponse)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.fillHeader(&out.Header)
	return out, nil
}

// Compact proposes a compaction; a physical one waits until the old
// revisions are gone from the backend.
func (s *Server) Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	res, err := s.propose(ctx, &pb.InternalRaftRequest{Compaction: r})
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
		case <-s.stopc:
			return nil, errs.ErrStopped
		}
	}
	out := res.Resp.(*pb.CompactionResponse)
	s.fillHeader(&out.Header)
	return out, nil
}

// checkQuota refuses a write that would take the backend past its quota and
// raises the NOSPACE alarm through raft, as etcd does before proposing.
func (s *Server) checkQuota(ctx context.Context, r proto.Message) error {
	if !s.rlockStores() {
		return errs.ErrStopped
	}
	fits := s.applier.QuotaAvailable(r)
	s.storeMu.RUnlock()
	if fits {
		return nil
	}
	alarm := &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: s.id, Alarm: pb.AlarmType_NOSPACE}
	if _, err := s.proposeRequest(ctx, &pb.InternalRaftRequest{Alarm: alarm}); err != nil {
		return err
	}
	return errs.ErrNoSpace
}

// fillHeader completes a header the applier started (it knows only the revision).
func (s *Server) fillHeader(h **pb.ResponseHeader) {
	if *h == nil {
		*h = &pb.ResponseHeader{Revision: s.currentRev()}
	}
	(*h).ClusterId, (*h).MemberId, (*h).RaftTerm = s.clusterID, s.id, s.node.Term()
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

// LinearizableReadCheck passes a read barrier, as /health does.
func (s *Server) LinearizableReadCheck(ctx context.Context) error {
	return s.linearizableReadNotify(ctx)
}

// SerializableReadCheck reads the local store, as /health?serializable=true does.
func (s *Server) SerializableReadCheck(ctx context.Context) error {
	if !s.rlockStores() {
		return errs.ErrStopped
	}
	defer s.storeMu.RUnlock()
	_, err := s.applier.Range(ctx, &pb.RangeRequest{Key: []byte("health"), Serializable: true})
	return err
}
