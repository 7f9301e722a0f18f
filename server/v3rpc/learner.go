package v3rpc

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
)

// LearnerChecker is implemented by a member that can be a learner; a
// learner serves only Status and serializable Range, as in etcd.
type LearnerChecker interface {
	IsLearner() bool
}

// supportedForLearner lists what a learner answers.
func supportedForLearner(req any) bool {
	switch r := req.(type) {
	case *pb.StatusRequest:
		return true
	case *pb.RangeRequest:
		return r.GetSerializable()
	}
	return false
}

func learnerUnaryInterceptor(lc LearnerChecker) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if lc.IsLearner() && !supportedForLearner(req) {
			return nil, rpctypes.ErrGRPCNotSupportedForLearner
		}
		return handler(ctx, req)
	}
}

func learnerStreamInterceptor(lc LearnerChecker) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if lc.IsLearner() {
			return rpctypes.ErrGRPCNotSupportedForLearner
		}
		return handler(srv, ss)
	}
}
