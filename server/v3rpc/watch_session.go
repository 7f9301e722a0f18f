package v3rpc

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/cairnkv/cairn/pkg/idtable"
	"github.com/cairnkv/cairn/server/metrics"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// watchSession is one Watch stream. Only run's goroutine touches its
// fields; recv hands the client's requests over through reqs.
type watchSession struct {
	srv    *watchServer
	stream grpc.BidiStreamingServer[pb.WatchRequest, pb.WatchResponse]
	ctx    context.Context
	mws    mvcc.WatchStream

	// watchers holds the options of every watcher the client created and
	// has not canceled (compacted ones too, until the client cancels them).
	watchers idtable.Table[mvcc.WatchID, watchOptions]
	// progressDue is set when a progress request found a watcher behind;
	// the request is repeated after every response forwarded until it is
	// answered, as etcd defers it.
	progressDue bool
	// creates counts watchers created on this stream; progressAllAt is its
	// value when the store queued the pending stream-wide progress
	// notification. A watcher created after that may still be catching up,
	// and the client applies a stream-wide notification to every watcher it
	// knows, so such a notification is stale and must not be sent.
	creates, progressAllAt uint64

	reqs    chan *pb.WatchRequest
	recvErr chan error // capacity 1: recv's last word

	enc watchEncoder
}

// watchOptions are what a watcher asked for beyond the store's part.
type watchOptions struct {
	live                             bool // set on every stored value: the zero value marks a free slot of watchers
	prevKV, fragment, progressNotify bool
	// sentEvents: events went out since the last progress tick, so the
	// watcher needs no progress notification at the next one.
	sentEvents bool
}

func newWatchSession(srv *watchServer, stream grpc.BidiStreamingServer[pb.WatchRequest, pb.WatchResponse], mws mvcc.WatchStream) *watchSession {
	return &watchSession{
		srv: srv, stream: stream, ctx: stream.Context(), mws: mws,
		reqs:    make(chan *pb.WatchRequest),
		recvErr: make(chan error, 1),
	}
}

// run serves the stream until it ends and returns why.
func (ss *watchSession) run() error {
	go ss.recv()
	ticker := time.NewTicker(ss.srv.progressInterval())
	defer ticker.Stop()
	for {
		var err error
		select {
		case req := <-ss.reqs:
			start := time.Now()
			err = ss.handle(req)
			metrics.WatchSendControlSeconds.Observe(time.Since(start).Seconds())
		case resp, ok := <-ss.mws.Chan():
			if !ok {
				return errWatchStoreClosed
			}
			start := time.Now()
			err = ss.forward(resp)
			metrics.ObserveWatchSend(time.Since(start), len(resp.Events))
			if len(ss.mws.Chan()) == 0 {
				// A burst is over: the next one reads the member's header
				// (its term) afresh.
				ss.enc.forgetHeader()
			}
		case <-ticker.C:
			start := time.Now()
			ss.notifyProgress()
			metrics.WatchSendProgressSeconds.Observe(time.Since(start).Seconds())
		case err = <-ss.recvErr:
			return streamEndError(err)
		case <-ss.ctx.Done():
			return streamEndError(ss.ctx.Err())
		}
		if err != nil {
			return err
		}
	}
}

// recv hands the client's requests to run. A client that closes its side
// (io.EOF) keeps receiving until it goes away, as with etcd.
func (ss *watchSession) recv() {
	for {
		req, err := ss.stream.Recv()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			ss.recvErr <- err
			return
		}
		select {
		case ss.reqs <- req:
		case <-ss.ctx.Done():
			return
		}
	}
}

// streamEndError is what a stream ended by the client or the transport
// returns; a canceled client gets etcd's "watch canceled".
func streamEndError(err error) error {
	if errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled {
		return rpctypes.ErrGRPCWatchCanceled
	}
	return err
}

// handle serves one request of the client. Requests of unknown type are
// ignored, as etcd does.
func (ss *watchSession) handle(req *pb.WatchRequest) error {
	switch {
	case req.GetCreateRequest() != nil:
		return ss.create(req.GetCreateRequest())
	case req.GetCancelRequest() != nil:
		return ss.cancel(req.GetCancelRequest().GetWatchId())
	case req.GetProgressRequest() != nil:
		ss.requestProgressAll()
	}
	return nil
}

// requestProgressAll asks the store for a stream-wide progress notification;
// it comes only when every watcher is synced, else it is retried after the
// next forwarded response.
func (ss *watchSession) requestProgressAll() {
	ss.progressDue = !ss.mws.RequestProgressAll()
	if !ss.progressDue {
		ss.progressAllAt = ss.creates
	}
}

// create adds a watcher and answers "created", or created+canceled with
// watch ID -1 and the reason when the store refuses it. A negative start
// revision is refused with etcd's compaction error text.
func (ss *watchSession) create(cr *pb.WatchCreateRequest) error {
	if cr.GetStartRevision() < 0 {
		return ss.send(ss.createRefused(rpctypes.ErrCompacted.Error()))
	}
	if wp, ok := ss.srv.ws.(WatchPermitter); ok {
		if err := permittedWatch(ss.ctx, wp, cr); err != nil {
			return ss.send(ss.createRefused(toGRPCError(err).Error()))
		}
	}
	key, end := watchRange(cr.GetKey(), cr.GetRangeEnd())
	id, err := ss.mws.Watch(mvcc.WatchID(cr.GetWatchId()), key, end, cr.GetStartRevision(), watchFilters(cr.GetFilters())...)
	if err != nil {
		return ss.send(ss.createRefused(err.Error()))
	}
	ss.watchers.Put(id, watchOptions{live: true, prevKV: cr.GetPrevKv(), fragment: cr.GetFragment(), progressNotify: cr.GetProgressNotify()})
	ss.creates++
	// The revision is read after the watcher exists: the client may take
	// it as the last revision seen, and the watcher starts no later.
	return ss.send(&pb.WatchResponse{Header: ss.header(ss.mws.Rev()), WatchId: int64(id), Created: true})
}

func (ss *watchSession) createRefused(reason string) *pb.WatchResponse {
	return &pb.WatchResponse{
		Header: ss.header(ss.mws.Rev()), WatchId: int64(mvcc.ProgressAllWatchID),
		Created: true, Canceled: true, CancelReason: reason,
	}
}

// watchRange turns the request's range into the store's: an empty key is
// "\x00", the smallest key; an empty range end means the single key.
func watchRange(key, end []byte) ([]byte, []byte) {
	if len(key) == 0 {
		key = []byte{0}
	}
	if len(end) == 0 {
		end = nil
	}
	return key, end
}

func filterNoPut(ev *mvccpb.Event) bool    { return ev.Type == mvccpb.Event_PUT }
func filterNoDelete(ev *mvccpb.Event) bool { return ev.Type == mvccpb.Event_DELETE }

// watchFilters maps the request's filters to the store's; unknown ones are
// ignored, as etcd does.
func watchFilters(types []pb.WatchCreateRequest_FilterType) []mvcc.FilterFunc {
	var fcs []mvcc.FilterFunc
	for _, t := range types {
		switch t {
		case pb.WatchCreateRequest_NOPUT:
			fcs = append(fcs, filterNoPut)
		case pb.WatchCreateRequest_NODELETE:
			fcs = append(fcs, filterNoDelete)
		}
	}
	return fcs
}

// cancel removes a watcher and answers "canceled"; an unknown ID gets no
// answer at all, as with etcd.
func (ss *watchSession) cancel(id int64) error {
	if err := ss.mws.Cancel(mvcc.WatchID(id)); err != nil {
		return nil
	}
	ss.watchers.Delete(mvcc.WatchID(id))
	return ss.send(&pb.WatchResponse{Header: ss.header(ss.mws.Rev()), WatchId: id, Canceled: true})
}

// forward sends one response of the store to the client. Responses of a
// watcher canceled meanwhile are dropped.
func (ss *watchSession) forward(r mvcc.WatchResponse) error {
	opts := ss.watchers.Get(r.WatchID)
	if opts == nil && r.WatchID != mvcc.ProgressAllWatchID {
		return nil
	}
	if r.WatchID == mvcc.ProgressAllWatchID && ss.progressAllAt != ss.creates {
		// Stale: a watcher created since may be behind. Ask again.
		ss.requestProgressAll()
		return nil
	}
	var err error
	switch {
	case opts == nil:
		err = ss.send(ss.response(r))
	case opts.fragment:
		err = ss.sendEvents(opts, ss.response(r), ss.srv.fragmentBytes)
	case opts.prevKV || r.CompactRevision != 0:
		err = ss.sendEvents(opts, ss.response(r), 0)
	default:
		err = ss.sendEncoded(opts, r)
	}
	if err == nil && ss.progressDue {
		ss.requestProgressAll()
	}
	return err
}

// response is the client's form of a store response.
func (ss *watchSession) response(r mvcc.WatchResponse) *pb.WatchResponse {
	return &pb.WatchResponse{
		Header: ss.header(r.Revision), WatchId: int64(r.WatchID), Events: r.Events,
		CompactRevision: r.CompactRevision, Canceled: r.CompactRevision != 0,
	}
}

// sendEncoded sends an event (or progress) response of a watcher without
// prevKV or fragmenting, with the header and events the stream's previous
// response encoded when they are the same.
func (ss *watchSession) sendEncoded(opts *watchOptions, r mvcc.WatchResponse) error {
	opts.sentEvents = opts.sentEvents || len(r.Events) > 0
	enc, err := ss.enc.encode(int64(r.WatchID), r.Revision, r.Events, ss.header)
	if err != nil {
		return err
	}
	if err := ss.stream.SendMsg(enc); err != nil {
		return err
	}
	// The metrics interceptor counts only proto messages' bytes.
	metrics.ClientGRPCSentBytes.Add(float64(enc.size))
	return nil
}

// sendEvents sends a watcher's response with the watcher's options applied,
// split into fragments of about fragmentBytes unless that is 0.
func (ss *watchSession) sendEvents(opts *watchOptions, resp *pb.WatchResponse, fragmentBytes int) error {
	if opts.prevKV {
		resp.Events = ss.withPrevKVs(resp.Events)
	}
	opts.sentEvents = opts.sentEvents || len(resp.Events) > 0
	if fragmentBytes == 0 {
		return ss.send(resp)
	}
	for _, f := range fragments(resp, fragmentBytes) {
		if err := ss.send(f); err != nil {
			return err
		}
	}
	return nil
}

// withPrevKVs returns evs with the key's previous KeyValue added to each
// event that is not a creation. The store's events are shared: changed
// ones are copies.
func (ss *watchSession) withPrevKVs(evs []*mvccpb.Event) []*mvccpb.Event {
	out := make([]*mvccpb.Event, len(evs))
	for i, ev := range evs {
		out[i] = ev
		if ev.Type == mvccpb.Event_PUT && ev.Kv.CreateRevision == ev.Kv.ModRevision {
			continue
		}
		prev, err := ss.srv.ws.KeyAt(ss.ctx, ev.Kv.Key, ev.Kv.ModRevision-1)
		if err == nil && prev != nil {
			out[i] = &mvccpb.Event{Type: ev.Type, Kv: ev.Kv, PrevKv: prev}
		}
	}
	return out
}

// notifyProgress asks the store for a progress response for every watcher
// with progress_notify that got no events since the last tick; the store
// answers only for watchers that are synced.
func (ss *watchSession) notifyProgress() {
	ss.watchers.Each(func(id mvcc.WatchID, opts *watchOptions) {
		if opts.progressNotify && !opts.sentEvents {
			ss.mws.RequestProgress(id)
		}
		opts.sentEvents = false
	})
}

// header is the member's header with the response's revision.
func (ss *watchSession) header(rev int64) *pb.ResponseHeader {
	h := ss.srv.s.Header()
	if h == nil {
		h = &pb.ResponseHeader{}
	}
	h.Revision = rev
	return h
}

func (ss *watchSession) send(resp *pb.WatchResponse) error {
	return ss.stream.Send(resp)
}
