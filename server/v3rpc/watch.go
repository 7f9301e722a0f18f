package v3rpc

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// The Watch service. One gRPC stream multiplexes any number of watchers of
// one mvcc.WatchStream of the member. Each stream has two goroutines: the
// handler's own, which owns all of the stream's state and does every Send,
// and a receiver that only hands the client's requests over. Because the
// handler creates a watcher and sends its "created" response before it
// reads the store's responses again, a watcher's events can never overtake
// its creation, and no lock is needed.
//
// The stream ends when the client goes away, when a Recv or Send fails, or
// when the member closes the mvcc stream (it replaced its store with a
// snapshot from the leader, or it stops): the client then gets
// errWatchStoreClosed, codes.Unavailable, on which etcd's client opens a new
// stream and resumes every watcher after the last revision it received.

// WatchServer is what the Watch service needs from a member
// (etcdserver.KVService); Config.Watch names it, and without it the service
// is not registered.
type WatchServer interface {
	// NewWatchStream opens a watch stream on the member's store. The member
	// closes it (its Chan closes) when the store is replaced or closed.
	NewWatchStream() (mvcc.WatchStream, error)
	// KeyAt returns key's KeyValue at revision rev, nil if it did not exist
	// then. It serves the prev_kv of events; an error leaves prev_kv unset.
	KeyAt(ctx context.Context, key []byte, rev int64) (*mvccpb.KeyValue, error)
}

// Progress notification intervals, as etcd's.
const (
	DefaultWatchProgressNotifyInterval = 10 * time.Minute
	minWatchProgressNotifyInterval     = 100 * time.Millisecond
)

// errWatchStoreClosed ends a stream whose mvcc stream the member closed.
// Unavailable makes etcd's client retry on a new stream.
var errWatchStoreClosed = status.Error(codes.Unavailable, "etcdserver: watch stream closed because the member's store was replaced or closed")

type watchServer struct {
	pb.UnimplementedWatchServer
	s  Server
	ws WatchServer
	lg *zap.Logger
	// fragmentBytes is the size from which a response of a fragment watcher
	// is split: --max-request-bytes plus gRPC's overhead, as in etcd.
	fragmentBytes int
	progressEvery time.Duration
}

func newWatchServer(s Server, ws WatchServer, cfg Config, lg *zap.Logger) *watchServer {
	every := cfg.WatchProgressNotifyInterval
	if every <= 0 {
		every = DefaultWatchProgressNotifyInterval
	}
	if every < minWatchProgressNotifyInterval {
		lg.Warn("raising the watch progress notify interval to its minimum",
			zap.Duration("given", every), zap.Duration("minimum", minWatchProgressNotifyInterval))
		every = minWatchProgressNotifyInterval
	}
	return &watchServer{
		s: s, ws: ws, lg: lg, progressEvery: every,
		fragmentBytes: int(min(cfg.MaxRequestBytes, math.MaxInt32-grpcOverheadBytes)) + grpcOverheadBytes,
	}
}

// progressInterval is the notify interval plus up to 10% jitter, so that
// streams opened together do not all notify at the same moment.
func (w *watchServer) progressInterval() time.Duration {
	return w.progressEvery + rand.N(w.progressEvery/10+1)
}

// Watch serves one stream until it ends.
func (w *watchServer) Watch(stream grpc.BidiStreamingServer[pb.WatchRequest, pb.WatchResponse]) error {
	mws, err := w.ws.NewWatchStream()
	if err != nil {
		return err
	}
	defer mws.Close()
	return newWatchSession(w, stream, mws).run()
}
