package v3rpc

import (
	"context"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

type fixedLeader uint64

func (l fixedLeader) Leader() uint64 { return uint64(l) }

func TestRequireLeader(t *testing.T) {
	withMD := metadata.NewIncomingContext(context.Background(),
		metadata.Pairs(rpctypes.MetadataRequireLeaderKey, rpctypes.MetadataHasLeader))
	tests := []struct {
		name    string
		ctx     context.Context
		leader  uint64
		wantErr error
	}{
		{"no metadata, no leader", context.Background(), 0, nil},
		{"required, no leader", withMD, 0, rpctypes.ErrGRPCNoLeader},
		{"required, leader known", withMD, 7, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			handler := func(context.Context, any) (any, error) { called = true; return "ok", nil }
			_, err := leaderUnaryInterceptor(fixedLeader(tt.leader))(tt.ctx, nil, &grpc.UnaryServerInfo{}, handler)
			if err != tt.wantErr {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if called != (tt.wantErr == nil) {
				t.Fatalf("handler called = %v", called)
			}
		})
	}
}

type learnerFlag bool

func (l learnerFlag) IsLearner() bool { return bool(l) }

func TestLearnerServesOnlyStatusAndSerializableRange(t *testing.T) {
	tests := []struct {
		name    string
		learner bool
		req     any
		allowed bool
	}{
		{"voter put", false, &pb.PutRequest{}, true},
		{"learner status", true, &pb.StatusRequest{}, true},
		{"learner serializable range", true, &pb.RangeRequest{Serializable: true}, true},
		{"learner linearizable range", true, &pb.RangeRequest{}, false},
		{"learner put", true, &pb.PutRequest{}, false},
		{"learner member list", true, &pb.MemberListRequest{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			handler := func(context.Context, any) (any, error) { return "ok", nil }
			_, err := learnerUnaryInterceptor(learnerFlag(tt.learner))(context.Background(), tt.req, &grpc.UnaryServerInfo{}, handler)
			if tt.allowed && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.allowed && err != rpctypes.ErrGRPCNotSupportedForLearner {
				t.Fatalf("err = %v, want %v", err, rpctypes.ErrGRPCNotSupportedForLearner)
			}
		})
	}
}
