package v3rpc

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/server/errs"
)

// grpcErrorOf maps each sentinel of server/errs to the gRPC status etcd
// answers with. Sentinels missing here (ErrCanceled, ErrTimeoutLeaderTransfer)
// are missing from etcd's table too and reach the client as codes.Unknown
// with their text, exactly as etcd does.
var grpcErrorOf = map[error]error{
	errs.ErrCompacted: rpctypes.ErrGRPCCompacted,
	errs.ErrFutureRev: rpctypes.ErrGRPCFutureRev,
	errs.ErrNoSpace:   rpctypes.ErrGRPCNoSpace,

	errs.ErrKeyNotFound:      rpctypes.ErrGRPCKeyNotFound,
	errs.ErrLeaseNotFound:    rpctypes.ErrGRPCLeaseNotFound,
	errs.ErrLeaseExists:      rpctypes.ErrGRPCLeaseExist,
	errs.ErrLeaseTTLTooLarge: rpctypes.ErrGRPCLeaseTTLTooLarge,

	errs.ErrStopped:                    rpctypes.ErrGRPCStopped,
	errs.ErrTimeout:                    rpctypes.ErrGRPCTimeout,
	errs.ErrTimeoutDueToLeaderFail:     rpctypes.ErrGRPCTimeoutDueToLeaderFail,
	errs.ErrTimeoutDueToConnectionLost: rpctypes.ErrGRPCTimeoutDueToConnectionLost,
	errs.ErrTimeoutWaitAppliedIndex:    rpctypes.ErrGRPCTimeoutWaitAppliedIndex,
	errs.ErrLeaderChanged:              rpctypes.ErrGRPCLeaderChanged,
	errs.ErrNotLeader:                  rpctypes.ErrGRPCNotLeader,
	errs.ErrNoLeader:                   rpctypes.ErrGRPCNoLeader,
	errs.ErrRequestTooLarge:            rpctypes.ErrGRPCRequestTooLarge,
	errs.ErrTooManyRequests:            rpctypes.ErrGRPCRequestTooManyRequests,
	errs.ErrUnhealthy:                  rpctypes.ErrGRPCUnhealthy,
	errs.ErrCorrupt:                    rpctypes.ErrGRPCCorrupt,

	errs.ErrIDRemoved:               rpctypes.ErrGRPCMemberNotFound,
	errs.ErrIDExists:                rpctypes.ErrGRPCMemberExist,
	errs.ErrIDNotFound:              rpctypes.ErrGRPCMemberNotFound,
	errs.ErrPeerURLExists:           rpctypes.ErrGRPCPeerURLExist,
	errs.ErrMemberNotLearner:        rpctypes.ErrGRPCMemberNotLearner,
	errs.ErrLearnerNotReady:         rpctypes.ErrGRPCLearnerNotReady,
	errs.ErrTooManyLearners:         rpctypes.ErrGRPCTooManyLearners,
	errs.ErrNotEnoughStartedMembers: rpctypes.ErrGRPCMemberNotEnoughStarted,
	errs.ErrBadURLs:                 rpctypes.ErrGRPCMemberBadURLs,
	errs.ErrBadLeaderTransferee:     rpctypes.ErrGRPCBadLeaderTransferee,
}

// toGRPCError turns an error of the member into what the client receives.
//
//   - nil stays nil; a gRPC status passes unchanged.
//   - A context error keeps gRPC's own status (Canceled "context canceled",
//     DeadlineExceeded "context deadline exceeded"): etcd hands these to the
//     gRPC runtime untouched, so its rpctypes.ErrGRPCCanceled and
//     ErrGRPCDeadlineExceeded never reach a client.
//   - A server/errs sentinel (also wrapped) becomes etcd's status for it.
//   - Anything else is codes.Unknown with the error's text.
func toGRPCError(err error) error {
	if err == nil {
		return nil
	}
	if _, isStatus := status.FromError(err); isStatus {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err()
	}
	if grpcErr, known := grpcErrorOf[err]; known {
		return grpcErr
	}
	for sentinel, grpcErr := range grpcErrorOf {
		if errors.Is(err, sentinel) {
			return grpcErr
		}
	}
	return status.Error(codes.Unknown, err.Error())
}

// unaryErrorInterceptor maps every error a unary handler returns, so the
// handlers can return the member's errors as they are.
func unaryErrorInterceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		return nil, toGRPCError(err)
	}
	return resp, nil
}

// streamErrorInterceptor is unaryErrorInterceptor for streaming RPCs.
func streamErrorInterceptor(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return toGRPCError(handler(srv, ss))
}
