package v3rpc

import (
	"context"
	"errors"
	"fmt"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/server/errs"
)

func TestToGRPCError(t *testing.T) {
	tests := []struct {
		in       error
		wantCode codes.Code
		wantMsg  string
	}{
		{errs.ErrCompacted, codes.OutOfRange, "etcdserver: mvcc: required revision has been compacted"},
		{errs.ErrFutureRev, codes.OutOfRange, "etcdserver: mvcc: required revision is a future revision"},
		{errs.ErrNoSpace, codes.ResourceExhausted, "etcdserver: mvcc: database space exceeded"},
		{errs.ErrKeyNotFound, codes.InvalidArgument, "etcdserver: key not found"},
		{errs.ErrLeaseNotFound, codes.NotFound, "etcdserver: requested lease not found"},
		{errs.ErrLeaseExists, codes.FailedPrecondition, "etcdserver: lease already exists"},
		{errs.ErrLeaseTTLTooLarge, codes.OutOfRange, "etcdserver: too large lease TTL"},
		{errs.ErrStopped, codes.Unavailable, "etcdserver: server stopped"},
		{errs.ErrTimeout, codes.Unavailable, "etcdserver: request timed out"},
		{errs.ErrTimeoutDueToLeaderFail, codes.Unavailable, "etcdserver: request timed out, possibly due to previous leader failure"},
		{errs.ErrTimeoutDueToConnectionLost, codes.Unavailable, "etcdserver: request timed out, possibly due to connection lost"},
		{errs.ErrTimeoutWaitAppliedIndex, codes.Unavailable, "etcdserver: request timed out, waiting for the applied index took too long"},
		{errs.ErrLeaderChanged, codes.Unavailable, "etcdserver: leader changed"},
		{errs.ErrNotLeader, codes.FailedPrecondition, "etcdserver: not leader"},
		{errs.ErrNoLeader, codes.Unavailable, "etcdserver: no leader"},
		{errs.ErrRequestTooLarge, codes.InvalidArgument, "etcdserver: request is too large"},
		{errs.ErrTooManyRequests, codes.ResourceExhausted, "etcdserver: too many requests"},
		{errs.ErrUnhealthy, codes.Unavailable, "etcdserver: unhealthy cluster"},
		{errs.ErrCorrupt, codes.DataLoss, "etcdserver: corrupt cluster"},
		{errs.ErrBadLeaderTransferee, codes.FailedPrecondition, "etcdserver: bad leader transferee"},
		// Not in etcd's table either: Unknown with the text.
		{errs.ErrCanceled, codes.Unknown, "etcdserver: request cancelled"},
		{errs.ErrTimeoutLeaderTransfer, codes.Unknown, "etcdserver: request timed out, leader transfer took too long"},
		{errors.New("disk on fire"), codes.Unknown, "disk on fire"},
		// Wrapped sentinels are recognised.
		{fmt.Errorf("applying: %w", errs.ErrCompacted), codes.OutOfRange, "etcdserver: mvcc: required revision has been compacted"},
		// Context errors keep gRPC's own status, as etcd lets them through.
		{context.Canceled, codes.Canceled, "context canceled"},
		{context.DeadlineExceeded, codes.DeadlineExceeded, "context deadline exceeded"},
		{fmt.Errorf("wait: %w", context.Canceled), codes.Canceled, "wait: context canceled"},
		// A status passes unchanged.
		{rpctypes.ErrGRPCPermissionDenied, codes.PermissionDenied, "etcdserver: permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.in.Error(), func(t *testing.T) {
			got := status.Convert(toGRPCError(tt.in))
			if got.Code() != tt.wantCode || got.Message() != tt.wantMsg {
				t.Fatalf("got %v %q, want %v %q", got.Code(), got.Message(), tt.wantCode, tt.wantMsg)
			}
		})
	}
	if toGRPCError(nil) != nil {
		t.Fatal("nil must stay nil")
	}
}

// TestErrorsMappedOverGRPC checks the interceptors: the member's sentinel
// reaches a real client as etcd's status, on unary and streaming RPCs.
func TestErrorsMappedOverGRPC(t *testing.T) {
	f := newFakeServer()
	f.err = errs.ErrCompacted
	c := serveFake(t, f, Config{})
	ctx := context.Background()
	want := rpctypes.ErrGRPCCompacted

	calls := map[string]func() error{
		"range": func() error { _, err := c.kv.Range(ctx, &pb.RangeRequest{Key: []byte("k")}); return err },
		"put":   func() error { _, err := c.kv.Put(ctx, &pb.PutRequest{Key: []byte("k")}); return err },
		"range stream": func() error {
			s, err := c.kv.RangeStream(ctx, &pb.RangeRequest{Key: []byte("k")})
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		},
		"snapshot": func() error {
			s, err := c.maint.Snapshot(ctx, &pb.SnapshotRequest{})
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		},
		"defragment": func() error { _, err := c.maint.Defragment(ctx, &pb.DefragmentRequest{}); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call()
			if status.Code(err) != status.Code(want) || status.Convert(err).Message() != status.Convert(want).Message() {
				t.Fatalf("got %v, want %v", err, want)
			}
			// The official client turns it back into its typed error.
			if rpctypes.Error(err) != rpctypes.ErrCompacted {
				t.Fatalf("client sees %v", rpctypes.Error(err))
			}
		})
	}
}
