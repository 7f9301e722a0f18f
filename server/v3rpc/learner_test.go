package v3rpc

import (
	"context"
	"errors"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
)

type fakeLearner struct{ learner, readOnly bool }

func (f fakeLearner) IsLearner() bool         { return f.learner }
func (f fakeLearner) IsReadOnlyLearner() bool { return f.learner && f.readOnly }

func TestLearnerInterceptors(t *testing.T) {
	reqs := []struct {
		name string
		req  any
	}{
		{"status", &pb.StatusRequest{}},
		{"serializable range", &pb.RangeRequest{Serializable: true}},
		{"linearizable range", &pb.RangeRequest{}},
		{"put", &pb.PutRequest{}},
		{"txn", &pb.TxnRequest{}},
		{"lease grant", &pb.LeaseGrantRequest{}},
	}
	streams := []string{watchMethod, "/etcdserverpb.Lease/LeaseKeepAlive"}
	for _, tc := range []struct {
		name      string
		lc        fakeLearner
		unaryOK   []bool // by reqs
		streamsOK []bool // by streams
	}{
		{"voter", fakeLearner{}, []bool{true, true, true, true, true, true}, []bool{true, true}},
		{"learner", fakeLearner{learner: true}, []bool{true, true, false, false, false, false}, []bool{false, false}},
		{"read-only learner", fakeLearner{learner: true, readOnly: true}, []bool{true, true, true, false, false, false}, []bool{true, false}},
		{"read-only voter", fakeLearner{readOnly: true}, []bool{true, true, true, true, true, true}, []bool{true, true}},
	} {
		unary := checkedUnary([]unaryCheck{learnerUnaryCheck(tc.lc)})
		for i, r := range reqs {
			_, err := unary(context.Background(), r.req, &grpc.UnaryServerInfo{}, func(context.Context, any) (any, error) { return nil, nil })
			if got := err == nil; got != tc.unaryOK[i] {
				t.Errorf("%s: %s served = %v (%v), want %v", tc.name, r.name, got, err, tc.unaryOK[i])
			} else if err != nil && !errors.Is(err, rpctypes.ErrGRPCNotSupportedForLearner) {
				t.Errorf("%s: %s: error %v", tc.name, r.name, err)
			}
		}
		stream := learnerStreamInterceptor(tc.lc)
		for i, m := range streams {
			err := stream(nil, nil, &grpc.StreamServerInfo{FullMethod: m}, func(any, grpc.ServerStream) error { return nil })
			if got := err == nil; got != tc.streamsOK[i] {
				t.Errorf("%s: stream %s served = %v (%v), want %v", tc.name, m, got, err, tc.streamsOK[i])
			}
		}
	}
}
