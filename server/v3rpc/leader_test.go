package v3rpc

import (
	"context"
	"testing"

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
