package v3rpc

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

type fixedLeader uint64

func (l fixedLeader) Leader() uint64 { return uint64(l) }

func TestRequiresLeaderMetadata(t *testing.T) {
	in := func(md metadata.MD) context.Context { return metadata.NewIncomingContext(context.Background(), md) }
	tests := []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"no metadata", context.Background(), false},
		{"other keys", in(metadata.Pairs("token", "t")), false},
		{"hasleader true", in(metadata.Pairs(rpctypes.MetadataRequireLeaderKey, rpctypes.MetadataHasLeader)), true},
		{"hasleader other value", in(metadata.Pairs(rpctypes.MetadataRequireLeaderKey, "false")), false},
		{"key in upper case", in(metadata.MD{"HasLeader": {rpctypes.MetadataHasLeader}}), true},
		{"first value counts", in(metadata.MD{rpctypes.MetadataRequireLeaderKey: {"x", rpctypes.MetadataHasLeader}}), false},
	}
	for _, tt := range tests {
		if got := requiresLeader(tt.ctx); got != tt.want {
			t.Errorf("%s: requiresLeader = %v, want %v", tt.name, got, tt.want)
		}
	}
}

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
			_, err := checkedUnary([]unaryCheck{leaderUnaryCheck(fixedLeader(tt.leader))})(tt.ctx, nil, &grpc.UnaryServerInfo{}, handler)
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
			_, err := checkedUnary([]unaryCheck{learnerUnaryCheck(learnerFlag(tt.learner))})(context.Background(), tt.req, &grpc.UnaryServerInfo{}, handler)
			if tt.allowed && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.allowed && err != rpctypes.ErrGRPCNotSupportedForLearner {
				t.Fatalf("err = %v, want %v", err, rpctypes.ErrGRPCNotSupportedForLearner)
			}
		})
	}
}

// switchLeader is a LeaderReporter whose leader the test changes.
type switchLeader struct{ lead atomic.Uint64 }

func (l *switchLeader) Leader() uint64 { return l.lead.Load() }

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }

// A stream that requires a leader ends with "no leader" once the member has
// been without one for maxNoLeaderChecks checks; with a leader it runs on.
func TestRequireLeaderStreamEndsWhenLeaderIsLost(t *testing.T) {
	lr := &switchLeader{}
	lr.lead.Store(7)
	ctx := metadata.NewIncomingContext(context.Background(),
		metadata.Pairs(rpctypes.MetadataRequireLeaderKey, rpctypes.MetadataHasLeader))
	interceptor := leaderStreamInterceptor(lr, time.Millisecond)
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		done <- interceptor(nil, ctxStream{ctx: ctx}, &grpc.StreamServerInfo{}, func(_ any, ss grpc.ServerStream) error {
			close(started)
			<-ss.Context().Done() // a watch stream runs until its context ends
			return ss.Context().Err()
		})
	}()
	<-started
	select {
	case err := <-done:
		t.Fatalf("stream ended while the member had a leader: %v", err)
	case <-time.After(20 * time.Millisecond): // many checks pass with a leader; passing never depends on this window
	}
	lr.lead.Store(0)
	select {
	case err := <-done:
		if err != rpctypes.ErrGRPCNoLeader {
			t.Fatalf("stream ended with %v, want %v", err, rpctypes.ErrGRPCNoLeader)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream still open long after the leader was lost")
	}
}
