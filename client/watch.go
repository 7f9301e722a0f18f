package client

import (
	"context"
	"errors"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Event kinds.
const (
	EventTypePut    = mvccpb.PUT
	EventTypeDelete = mvccpb.DELETE
)

// Event is one change of a key.
type Event mvccpb.Event

// IsCreate reports whether the event created the key.
func (e *Event) IsCreate() bool {
	return e.Type == EventTypePut && e.Kv.CreateRevision == e.Kv.ModRevision
}

// IsModify reports whether the event updated an existing key.
func (e *Event) IsModify() bool {
	return e.Type == EventTypePut && e.Kv.CreateRevision != e.Kv.ModRevision
}

// WatchResponse is a batch of events, or a notification (created,
// progress, canceled).
type WatchResponse struct {
	Header *pb.ResponseHeader
	Events []*Event
	// CompactRevision is set when the watch's start revision is compacted;
	// the watch is then canceled.
	CompactRevision int64
	Canceled        bool
	Created         bool

	closeErr     error
	cancelReason string
}

// Err is why the watch ended, or nil.
func (wr *WatchResponse) Err() error {
	switch {
	case wr.closeErr != nil:
		return wr.closeErr
	case wr.CompactRevision != 0:
		return rpctypes.ErrCompacted
	case wr.Canceled && wr.cancelReason != "":
		return errors.New(wr.cancelReason)
	case wr.Canceled:
		return errors.New("client: watch canceled")
	}
	return nil
}

// IsProgressNotify reports whether the response only says that the watch
// has seen every event up to Header.Revision.
func (wr *WatchResponse) IsProgressNotify() bool {
	return len(wr.Events) == 0 && !wr.Canceled && !wr.Created &&
		wr.CompactRevision == 0 && wr.Header != nil && wr.Header.Revision != 0
}

// WatchChan delivers a watch's responses; it closes when the watch ends.
type WatchChan <-chan WatchResponse

// Watcher watches keys.
type Watcher interface {
	// Watch watches key (or a range, with WithPrefix, WithRange or
	// WithFromKey), from WithRev's revision or from now. The channel closes
	// when ctx ends, the server cancels the watch (the last response says
	// why) or the client closes. After a reconnect the watch resumes
	// after the last revision it delivered.
	Watch(ctx context.Context, key string, opts ...OpOption) WatchChan
	// RequestProgress asks the server to send a progress notification on
	// every active watch.
	RequestProgress(ctx context.Context) error
	// Close ends every watch.
	Close() error
}

type watcher struct {
	c      *Client
	remote pb.WatchClient
	runs   *workers // one per Watch

	mu      sync.Mutex
	streams map[*watchStream]struct{}
}

// NewWatcher returns the Watch API of c; Close it to end its watches.
func NewWatcher(c *Client) Watcher { return newWatcher(c) }

func newWatcher(c *Client) *watcher {
	return &watcher{c: c, remote: pb.NewWatchClient(c.conn), runs: newWorkers(c.ctx), streams: map[*watchStream]struct{}{}}
}

func (w *watcher) Watch(ctx context.Context, key string, opts ...OpOption) WatchChan {
	op := newOp(tRange, key, opts)
	ch := make(chan WatchResponse)
	started := w.runs.start(ctx, func(ctx context.Context) {
		defer close(ch)
		ws := &watchStream{w: w, op: op, ch: ch, next: op.rev}
		ws.run(ctx)
	})
	if !started {
		close(ch)
	}
	return ch
}

func (w *watcher) RequestProgress(ctx context.Context) error {
	w.mu.Lock()
	streams := make([]*watchStream, 0, len(w.streams))
	for ws := range w.streams {
		streams = append(streams, ws)
	}
	w.mu.Unlock()
	req := &pb.WatchRequest{RequestUnion: &pb.WatchRequest_ProgressRequest{ProgressRequest: &pb.WatchProgressRequest{}}}
	for _, ws := range streams {
		if err := ws.send(req); err != nil && !isStreamBreak(err) {
			return toErr(ctx, err)
		}
	}
	return ctx.Err()
}

func (w *watcher) Close() error {
	w.runs.close()
	return nil
}

func (w *watcher) register(ws *watchStream, on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if on {
		w.streams[ws] = struct{}{}
	} else {
		delete(w.streams, ws)
	}
}

// watchStream is one watch. It owns a gRPC Watch stream and replaces it
// when the connection breaks.
type watchStream struct {
	w  *watcher
	op Op
	ch chan<- WatchResponse

	next    int64 // revision to resume from; 0: from now
	created bool  // the created response was seen
	// token is the auth token the current stream was opened with;
	// renewedToken says a new one was fetched since the server last
	// accepted the watch, so a second refusal ends the watch.
	token        string
	renewedToken bool
	// progressed says the current stream delivered something.
	progressed bool

	mu     sync.Mutex // guards stream for Send
	stream pb.Watch_WatchClient
}

func (ws *watchStream) send(req *pb.WatchRequest) error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.stream == nil {
		return nil
	}
	return ws.stream.Send(req)
}

// run serves the watch over successive streams until it ends.
func (ws *watchStream) run(ctx context.Context) {
	for attempt := 0; ; attempt++ {
		err := ws.serve(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		if errors.Is(err, errTokenRenewed) {
			continue
		}
		if !isStreamBreak(err) && status.Code(err) != codes.Internal {
			ws.deliver(ctx, WatchResponse{Canceled: true, closeErr: toErr(ctx, err)})
			return
		}
		ws.w.c.lg.Debug("watch stream broke; resuming", zap.Int64("revision", ws.next), zap.Error(err))
		if ws.w.c.wait(ctx, min(attempt, 8)) != nil {
			return
		}
		if ws.progressed {
			ws.progressed, attempt = false, 0 // that stream worked: start the backoff over
		}
	}
}

// serve runs one stream: nil when the watch is over, else the error that
// broke the stream.
func (ws *watchStream) serve(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ws.token = ws.w.c.tokens.current()
	stream, err := ws.w.remote.Watch(sctx)
	if err != nil {
		return err
	}
	if err := stream.Send(ws.op.watchRequest(ws.next)); err != nil {
		return err
	}
	ws.mu.Lock()
	ws.stream = stream
	ws.mu.Unlock()
	ws.w.register(ws, true)
	defer func() {
		ws.w.register(ws, false)
		ws.mu.Lock()
		ws.stream = nil
		ws.mu.Unlock()
	}()
	return ws.recv(ctx, stream)
}

func (ws *watchStream) recv(ctx context.Context, stream pb.Watch_WatchClient) error {
	var frags []*mvccpb.Event
	for {
		r, err := stream.Recv()
		if err != nil {
			return err
		}
		if r.Fragment {
			frags = append(frags, r.Events...)
			continue
		}
		if frags != nil {
			r.Events, frags = append(frags, r.Events...), nil
		}
		if r.Canceled && ws.renewToken(ctx, r.CancelReason) {
			return errTokenRenewed
		}
		if !ws.handle(ctx, r) {
			return nil
		}
	}
}

// errTokenRenewed ends a stream whose watch the server refused for its
// auth token after the client got a new token: the watch resumes on a new
// stream at once.
var errTokenRenewed = errors.New("client: watch auth token renewed")

// renewToken gets a new auth token when the server canceled the watch for
// the stream's token, once until the server accepts the watch again.
func (ws *watchStream) renewToken(ctx context.Context, reason string) bool {
	ts := ws.w.c.tokens
	if ws.renewedToken || ts.user == "" || !isTokenRejection(reason) {
		return false
	}
	ws.renewedToken = true
	if err := ts.refresh(ctx, ws.token); err != nil {
		ws.w.c.lg.Warn("watch could not renew its auth token", zap.Error(err))
		return false
	}
	return true
}

// handle delivers one response and moves the resume revision; false ends
// the watch.
func (ws *watchStream) handle(ctx context.Context, r *pb.WatchResponse) bool {
	ws.progressed = true
	if r.Canceled {
		ws.deliver(ctx, WatchResponse{
			Header: r.Header, CompactRevision: r.CompactRevision, Canceled: true,
			Created: r.Created, cancelReason: r.CancelReason,
		})
		return false
	}
	wr := WatchResponse{Header: r.Header, CompactRevision: r.CompactRevision}
	switch {
	case r.Created:
		ws.renewedToken = false
		if ws.next == 0 && r.Header != nil {
			ws.next = r.Header.Revision + 1
		}
		if ws.created || !ws.op.createdNotify {
			ws.created = true
			return ctx.Err() == nil
		}
		ws.created, wr.Created = true, true
	case len(r.Events) > 0:
		wr.Events = make([]*Event, len(r.Events))
		for i, e := range r.Events {
			wr.Events[i] = (*Event)(e)
		}
		ws.next = r.Events[len(r.Events)-1].Kv.ModRevision + 1
	case r.Header != nil && r.Header.Revision >= ws.next:
		ws.next = r.Header.Revision + 1 // progress: nothing up to here is missing
	}
	return ws.deliver(ctx, wr)
}

func (ws *watchStream) deliver(ctx context.Context, wr WatchResponse) bool {
	select {
	case ws.ch <- wr:
		return true
	case <-ctx.Done():
		return false
	}
}
