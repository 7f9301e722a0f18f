package v3rpc

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"
)

// DefaultWarningUnaryRequestDuration is etcd's
// --warning-unary-request-duration.
const DefaultWarningUnaryRequestDuration = 300 * time.Millisecond

// requestStats is what etcd logs about a unary request that took longer
// than --warning-unary-request-duration (as a warning), or about every
// request at debug level. Values of Put and Txn requests are left out.
type requestStats struct {
	reqCount, respCount int64
	reqSize, respSize   int
	content             string
}

// statsInterceptor logs request stats as etcd's log interceptor does.
func statsInterceptor(lg *zap.Logger, warnAfter time.Duration) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		took := time.Since(start)
		debug := lg.Core().Enabled(zapcore.DebugLevel)
		if debug || took > warnAfter {
			logRequestStats(ctx, lg, debug, start, took, info.FullMethod, statsOf(req, resp))
		}
		return resp, err
	}
}

func logRequestStats(ctx context.Context, lg *zap.Logger, debug bool, start time.Time, took time.Duration, method string, st requestStats) {
	remote := "No remote client info."
	if p, ok := peer.FromContext(ctx); ok {
		remote = p.Addr.String()
	}
	log := lg.Warn
	if debug {
		log = lg.Debug
	}
	log("request stats",
		zap.Time("start time", start),
		zap.Duration("time spent", took),
		zap.String("remote", remote),
		zap.String("response type", method),
		zap.Int64("request count", st.reqCount),
		zap.Int("request size", st.reqSize),
		zap.Int64("response count", st.respCount),
		zap.Int("response size", st.respSize),
		zap.String("request content", st.content))
}

// statsOf measures a KV request and its response as etcd does; other
// requests report -1 throughout.
func statsOf(req, resp any) requestStats {
	switch r := resp.(type) {
	case *pb.RangeResponse:
		q, _ := req.(*pb.RangeRequest)
		return requestStats{reqSize: proto.Size(q), content: q.String(), respCount: r.GetCount(), respSize: proto.Size(r)}
	case *pb.PutResponse:
		q, _ := req.(*pb.PutRequest)
		return requestStats{reqCount: 1, reqSize: proto.Size(q), content: pb.NewLoggablePutRequest(q).String(), respSize: proto.Size(r)}
	case *pb.DeleteRangeResponse:
		q, _ := req.(*pb.DeleteRangeRequest)
		return requestStats{reqSize: proto.Size(q), content: q.String(), respCount: r.GetDeleted(), respSize: proto.Size(r)}
	case *pb.TxnResponse:
		q, _ := req.(*pb.TxnRequest)
		ops := q.GetFailure()
		if r.GetSucceeded() {
			ops = q.GetSuccess()
		}
		st := requestStats{reqCount: int64(len(ops)), content: pb.NewLoggableTxnRequest(q).String(), respSize: proto.Size(r)}
		for _, op := range ops {
			st.reqSize += proto.Size(op)
		}
		return st
	}
	return requestStats{reqCount: -1, reqSize: -1, respCount: -1, respSize: -1}
}
