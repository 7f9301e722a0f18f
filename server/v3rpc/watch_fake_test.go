package v3rpc

import (
	"context"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// watchFake is a member with a real mvcc store behind the Watch service.
type watchFake struct {
	*fakeServer
	kv *mvcc.Store

	streamsMu sync.Mutex
	streams   map[*fakeWatchStream]struct{}
	opened    sync.WaitGroup // one per stream not closed yet
}

// fakeWatchStream counts itself out of watchFake.opened once closed.
type fakeWatchStream struct {
	mvcc.WatchStream
	f    *watchFake
	once sync.Once
}

func (ws *fakeWatchStream) Close() {
	ws.WatchStream.Close()
	ws.once.Do(func() {
		ws.f.streamsMu.Lock()
		delete(ws.f.streams, ws)
		ws.f.streamsMu.Unlock()
		ws.f.opened.Done()
	})
}

// newWatchFake opens a store on a temporary backend and serves it; the
// returned client connection is closed when the test ends.
func newWatchFake(t *testing.T, cfg Config) (*watchFake, *grpc.ClientConn) {
	t.Helper()
	be, _ := backend.NewTmpBackend(t)
	f := &watchFake{fakeServer: newFakeServer(), kv: mvcc.New(nil, be, mvcc.StoreConfig{}), streams: make(map[*fakeWatchStream]struct{})}
	t.Cleanup(func() {
		// The handlers close their streams once gRPC has stopped: wait for
		// that before the store and the backend go away.
		waitGroupBounded(t, &f.opened, 5*time.Second)
		f.kv.Close()
	})
	return f, serveServer(t, f, cfg)
}

func waitGroupBounded(t *testing.T, wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Errorf("watch streams still open after %v", d)
	}
}

// serveServer is serveFake for any Server.
func serveServer(t *testing.T, s Server, cfg Config) *grpc.ClientConn {
	t.Helper()
	if m, ok := s.(MaintenanceServer); ok && cfg.Maintenance == nil {
		cfg.Maintenance = m
	}
	if kv, ok := s.(KVServer); ok && cfg.KV == nil {
		cfg.KV = kv
	}
	if ws, ok := s.(WatchServer); ok && cfg.Watch == nil {
		cfg.Watch = ws
	}
	return serveConfigured(t, s, cfg)
}

func (f *watchFake) NewWatchStream() (mvcc.WatchStream, error) {
	f.streamsMu.Lock()
	defer f.streamsMu.Unlock()
	ws := &fakeWatchStream{WatchStream: f.kv.NewWatchStream(), f: f}
	f.streams[ws] = struct{}{}
	f.opened.Add(1)
	return ws, nil
}

func (f *watchFake) KeyAt(ctx context.Context, key []byte, rev int64) (*mvccpb.KeyValue, error) {
	res, err := f.kv.Range(ctx, key, nil, mvcc.RangeOptions{Rev: rev, Limit: 1})
	if err != nil || len(res.KVs) == 0 {
		return nil, err
	}
	return res.KVs[0], nil
}

func (f *watchFake) Header() *pb.ResponseHeader {
	return &pb.ResponseHeader{ClusterId: fakeClusterID, MemberId: fakeMemberID, Revision: f.kv.Rev(), RaftTerm: fakeTerm}
}

// closeStreams closes the open mvcc streams, as a member replacing its
// store does.
func (f *watchFake) closeStreams() {
	f.streamsMu.Lock()
	open := make([]*fakeWatchStream, 0, len(f.streams))
	for ws := range f.streams {
		open = append(open, ws)
	}
	f.streamsMu.Unlock()
	for _, ws := range open {
		ws.WatchStream.Close()
	}
}

// put writes key/value pairs in one transaction and returns its revision.
func (f *watchFake) put(pairs ...string) int64 {
	txn := f.kv.Write()
	defer txn.End()
	var rev int64
	for i := 0; i+1 < len(pairs); i += 2 {
		rev = txn.Put([]byte(pairs[i]), []byte(pairs[i+1]), 0)
	}
	return rev
}

func (f *watchFake) del(key string) int64 {
	_, rev := f.kv.DeleteRange([]byte(key), nil)
	return rev
}

// testWatch is a raw Watch stream whose responses a goroutine collects.
type testWatch struct {
	t      *testing.T
	stream pb.Watch_WatchClient
	resps  chan *pb.WatchResponse
	done   chan struct{} // closed when the stream ended; err says why
	err    error
}

const watchWait = 5 * time.Second

func openWatch(t *testing.T, conn *grpc.ClientConn) *testWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := pb.NewWatchClient(conn).Watch(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	w := &testWatch{t: t, stream: stream, resps: make(chan *pb.WatchResponse, 1024), done: make(chan struct{})}
	go w.pump(ctx)
	t.Cleanup(func() {
		cancel()
		<-w.done
	})
	return w
}

func (w *testWatch) pump(ctx context.Context) {
	defer close(w.done)
	for {
		resp, err := w.stream.Recv()
		if err != nil {
			w.err = err
			return
		}
		select {
		case w.resps <- resp:
		case <-ctx.Done():
			w.err = ctx.Err()
			return
		}
	}
}

func (w *testWatch) send(req *pb.WatchRequest) {
	w.t.Helper()
	if err := w.stream.Send(req); err != nil {
		w.t.Fatalf("send %v: %v", req, err)
	}
}

// next is the next response; the test fails after watchWait without one.
func (w *testWatch) next() *pb.WatchResponse {
	w.t.Helper()
	select {
	case resp := <-w.resps:
		return resp
	case <-w.done:
		select {
		case resp := <-w.resps:
			return resp
		default:
		}
		w.t.Fatalf("stream ended: %v", w.err)
	case <-time.After(watchWait):
		w.t.Fatalf("no watch response within %v", watchWait)
	}
	return nil
}

// none fails if a response arrives within d.
func (w *testWatch) none(d time.Duration) {
	w.t.Helper()
	select {
	case resp := <-w.resps:
		w.t.Fatalf("unexpected response %v", resp)
	case <-time.After(d):
	}
}

// ended waits for the stream to end and returns its error.
func (w *testWatch) ended() error {
	w.t.Helper()
	select {
	case <-w.done:
		return w.err
	case <-time.After(watchWait):
		w.t.Fatalf("stream still open after %v", watchWait)
	}
	return nil
}

// create sends cr and returns the answer, which must be "created".
func (w *testWatch) create(cr *pb.WatchCreateRequest) int64 {
	w.t.Helper()
	w.send(createReq(cr))
	resp := w.next()
	if !resp.Created || resp.Canceled {
		w.t.Fatalf("create %v: got %v, want created", cr, resp)
	}
	return resp.WatchId
}

func createReq(cr *pb.WatchCreateRequest) *pb.WatchRequest {
	return &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: cr}}
}

func cancelReq(id int64) *pb.WatchRequest {
	return &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CancelRequest{CancelRequest: &pb.WatchCancelRequest{WatchId: id}}}
}

func progressReq() *pb.WatchRequest {
	return &pb.WatchRequest{RequestUnion: &pb.WatchRequest_ProgressRequest{ProgressRequest: &pb.WatchProgressRequest{}}}
}
