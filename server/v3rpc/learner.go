package v3rpc

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// LearnerChecker is implemented by a member that can be a learner; a
// learner serves only Status and serializable Range, as in etcd.
type LearnerChecker interface {
	IsLearner() bool
}

// ReadOnlyLearnerChecker is implemented by a member that can be a read-only
// learner (cairn's --experimental-learner-read-only): such a learner also
// serves linearizable Range (the member asks the leader for a ReadIndex) and
// Watch, and still refuses everything else.
type ReadOnlyLearnerChecker interface {
	IsReadOnlyLearner() bool
}

// ReadOnlyLearnerHeader is the response header (gRPC metadata) a read-only
// learner adds to Status: "true".
const ReadOnlyLearnerHeader = "cairn-learner-read-only"

// watchMethod is the one stream a read-only learner serves.
const watchMethod = "/etcdserverpb.Watch/Watch"

// supportedForLearner lists what a learner answers.
func supportedForLearner(req any, readOnly bool) bool {
	switch r := req.(type) {
	case *pb.StatusRequest:
		return true
	case *pb.RangeRequest:
		return readOnly || r.GetSerializable()
	}
	return false
}

func isReadOnlyLearner(lc LearnerChecker) bool {
	ro, ok := lc.(ReadOnlyLearnerChecker)
	return ok && ro.IsReadOnlyLearner()
}

func learnerUnaryCheck(lc LearnerChecker) unaryCheck {
	return func(ctx context.Context, req any) error {
		if !lc.IsLearner() {
			return nil
		}
		readOnly := isReadOnlyLearner(lc)
		if !supportedForLearner(req, readOnly) {
			return rpctypes.ErrGRPCNotSupportedForLearner
		}
		if _, ok := req.(*pb.StatusRequest); ok && readOnly {
			// StatusResponse has no field for it: report it in the header.
			grpc.SetHeader(ctx, metadata.Pairs(ReadOnlyLearnerHeader, "true"))
		}
		return nil
	}
}

func learnerStreamInterceptor(lc LearnerChecker) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if lc.IsLearner() && (info.FullMethod != watchMethod || !isReadOnlyLearner(lc)) {
			return rpctypes.ErrGRPCNotSupportedForLearner
		}
		return handler(srv, ss)
	}
}
