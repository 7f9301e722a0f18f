package etcdserver

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/apply"
	"github.com/cairnkv/cairn/server/metrics"
)

func TestRequestOp(t *testing.T) {
	tests := []struct {
		r    *pb.InternalRaftRequest
		want string
	}{
		{&pb.InternalRaftRequest{Put: &pb.PutRequest{}}, "Put"},
		{&pb.InternalRaftRequest{Header: &pb.RequestHeader{ID: 1}, Txn: &pb.TxnRequest{}}, "Txn"},
		{&pb.InternalRaftRequest{LeaseGrant: &pb.LeaseGrantRequest{}}, "LeaseGrant"},
		{&pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{}}, "Compaction"},
		{&pb.InternalRaftRequest{ClusterMemberAttrSet: &membershippb.ClusterMemberAttrSetRequest{}}, "ClusterMemberAttrSet"},
		{&pb.InternalRaftRequest{AuthEnable: &pb.AuthEnableRequest{}}, "AuthEnable"},
		{&pb.InternalRaftRequest{}, "Unknown"},
	}
	for _, tt := range tests {
		if got := requestOp(tt.r); got != tt.want {
			t.Errorf("requestOp(%v) = %q, want %q", tt.r, got, tt.want)
		}
	}
}

// The requests named without reflection get the name reflection gives.
func TestCommonRequestOpMatchesReflection(t *testing.T) {
	for _, r := range []*pb.InternalRaftRequest{
		{Put: &pb.PutRequest{}},
		{Header: &pb.RequestHeader{ID: 7}, Txn: &pb.TxnRequest{}},
		{DeleteRange: &pb.DeleteRangeRequest{}},
		{Range: &pb.RangeRequest{}},
		{LeaseGrant: &pb.LeaseGrantRequest{}},
		{LeaseRevoke: &pb.LeaseRevokeRequest{}},
		{LeaseCheckpoint: &pb.LeaseCheckpointRequest{}},
	} {
		got := commonRequestOp(r)
		if want := requestOpByReflection(r); got == "" || got != want {
			t.Errorf("commonRequestOp(%v) = %q, reflection says %q", r, got, want)
		}
	}
}

func counterValue(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return families[0].GetMetric()[0].GetCounter().GetValue()
}

func TestRecordApplyCountsSlowApplies(t *testing.T) {
	const threshold = 100 * time.Millisecond // --warning-apply-duration
	s := &Server{lg: zap.NewNop(), cfg: &Config{WarningApplyDuration: threshold}}
	r := &pb.InternalRaftRequest{Put: &pb.PutRequest{}}
	tests := []struct {
		name   string
		took   time.Duration
		result *apply.Result
		slow   float64
	}{
		{"fast", time.Millisecond, &apply.Result{}, 0},
		{"at the threshold", threshold, &apply.Result{}, 0},
		{"slow", threshold + time.Millisecond, &apply.Result{}, 1},
		{"slow and failed", time.Second, &apply.Result{Err: errors.New("x")}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := counterValue(t, metrics.SlowApplies)
			s.recordApply(r, tt.result, tt.took)
			if got := counterValue(t, metrics.SlowApplies) - before; got != tt.slow {
				t.Errorf("slow_apply_total rose by %v, want %v", got, tt.slow)
			}
		})
	}
}
