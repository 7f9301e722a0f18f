package peer

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/wait"
)

// Queue sizes (etcd's): a full queue drops rather than blocks.
const (
	streamQueueSize   = 4096
	pipelineQueueSize = 64
	recvQueueSize     = 4096
	propQueueSize     = 4096
	pipelineWorkers   = 4
)

// peer is everything the Transport keeps for one remote member.
type peer struct {
	t      *Transport
	id     uint64
	lg     *zap.Logger
	urls   *peerAddrs
	status *peerStatus
	m      *peerMetrics

	msgAppWriter *streamWriter // MsgApp, msgappv2 format
	msgWriter    *streamWriter // everything else, message format
	pipeline     *pipeline

	dropped atomic.Uint64 // messages Send found no room for

	recvc chan *raftpb.Message // from both stream readers
	propc chan *raftpb.Message // MsgProp, kept apart so proposals cannot crowd out raft traffic

	ctx     context.Context
	cancel  context.CancelFunc
	running wait.Group // every goroutine of the peer
}

func newPeer(t *Transport, id uint64, urls []string) (*peer, error) {
	picker, err := newPeerAddrs(urls)
	if err != nil {
		return nil, err
	}
	lg := t.lg.With(zap.String("remote-peer-id", idString(id)))
	ctx, cancel := context.WithCancel(context.Background())
	m := newPeerMetrics(t.cfg.ID, id)
	p := &peer{
		t: t, id: id, lg: lg, urls: picker, m: m,
		status: &peerStatus{lg: lg, m: m},
		recvc:  make(chan *raftpb.Message, recvQueueSize),
		propc:  make(chan *raftpb.Message, propQueueSize),
		ctx:    ctx, cancel: cancel,
	}
	p.msgAppWriter = newStreamWriter(p, streamMsgAppV2)
	p.msgWriter = newStreamWriter(p, streamMessage)
	p.pipeline = &pipeline{p: p, msgc: make(chan *raftpb.Message, pipelineQueueSize)}
	return p, nil
}

func (p *peer) start() {
	p.goSafe(p.msgAppWriter.run)
	p.goSafe(p.msgWriter.run)
	p.goSafe((&streamReader{p: p, typ: streamMsgAppV2}).run)
	p.goSafe((&streamReader{p: p, typ: streamMessage}).run)
	for range pipelineWorkers {
		p.goSafe(p.pipeline.run)
	}
	p.goSafe(func() { p.deliver(p.recvc) })
	p.goSafe(func() { p.deliver(p.propc) })
	p.goSafe(p.probe)
}

// goSafe runs f on a goroutine the peer waits for on stop; it reports
// false if the peer is already stopping.
func (p *peer) goSafe(f func()) bool { return p.running.Go(f) }

// stop ends every goroutine of the peer and every stream it serves.
func (p *peer) stop() {
	p.running.Close(p.cancel)
	p.m.forget()
}

// deliver steps received messages into raft in the order they arrived.
func (p *peer) deliver(q <-chan *raftpb.Message) {
	for {
		select {
		case m := <-q:
			if err := p.t.process(p.ctx, m); err != nil && p.ctx.Err() == nil {
				p.lg.Warn("failed to process raft message", zap.Error(err))
			}
		case <-p.ctx.Done():
			return
		}
	}
}

// send queues m on the path that suits it, never blocking.
func (p *peer) send(m *raftpb.Message) {
	if m.GetType() == raftpb.MsgSnap {
		if !p.goSafe(func() { p.sendSnapshot(m) }) {
			p.t.reports.reportSnapshot(p.id, raft.SnapshotFailure)
		}
		return
	}
	q, path := p.pick(m)
	select {
	case q <- m:
	default:
		p.dropped.Add(1)
		p.m.sentFailures.Inc()
		p.t.reports.reportUnreachable(p.id)
		p.lg.Debug("dropped raft message: sending buffer is full",
			zap.String("message-type", m.GetType().String()), zap.String("path", path))
	}
}

// pick chooses the queue for m: MsgApp on the msgappv2 stream, anything on
// the message stream, the pipeline when no stream is up.
func (p *peer) pick(m *raftpb.Message) (chan<- *raftpb.Message, string) {
	if m.GetType() == raftpb.MsgApp {
		if q := p.msgAppWriter.sendQueue(); q != nil {
			return q, "msgappv2"
		}
	}
	if q := p.msgWriter.sendQueue(); q != nil {
		return q, "message"
	}
	return p.pipeline.msgc, "pipeline"
}

// failed records a failed delivery to u.
func (p *peer) failed(u url.URL, what string, err error) {
	p.urls.failed(u)
	p.status.deactivate(what, err)
	if errors.Is(err, ErrMemberRemoved) {
		p.t.reportCritical(ErrMemberRemoved)
	}
}

// peerStatus tracks whether the peer is reachable and since when.
type peerStatus struct {
	lg     *zap.Logger
	m      *peerMetrics
	mu     sync.Mutex
	active bool
	since  time.Time
}

func (s *peerStatus) activate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.active {
		s.lg.Info("peer became active")
		s.active, s.since = true, time.Now()
		s.m.active.Set(1)
	}
}

func (s *peerStatus) deactivate(what string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active {
		s.lg.Warn("peer became inactive", zap.String("failed", what), zap.Error(err))
		s.active, s.since = false, time.Time{}
		s.m.active.Set(0)
		s.m.disconnected.Inc()
	}
}

func (s *peerStatus) activeSince() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.since
}

// peerSchemes are the schemes a peer URL may have, as in etcd.
var peerSchemes = map[string]bool{"http": true, "https": true, "unix": true, "unixs": true}

// peerAddrs are a peer's URLs in the order they are tried: the first is in
// use until a request to it fails, then it goes to the back of the line.
type peerAddrs struct {
	mu    sync.Mutex
	order []url.URL
}

func newPeerAddrs(urls []string) (*peerAddrs, error) {
	a := &peerAddrs{}
	return a, a.replace(urls)
}

// replace takes a new set of URLs (a member update), as etcd reads them:
// trimmed, http(s) or unix(s), with a host.
func (a *peerAddrs) replace(urls []string) error {
	parsed := make([]url.URL, 0, len(urls))
	for _, s := range urls {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		if !peerSchemes[u.Scheme] || u.Host == "" {
			return errors.New("peer: URL must be http(s):// or unix(s):// with a host: " + s)
		}
		parsed = append(parsed, *u)
	}
	if len(parsed) == 0 {
		return errors.New("peer: no URLs")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.order = parsed
	return nil
}

// current is the URL to use now.
func (a *peerAddrs) current() url.URL {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.order[0]
}

// failed sends u to the back of the line if it is the one in use (another
// goroutine may have moved on already).
func (a *peerAddrs) failed(u url.URL) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.order) > 1 && a.order[0] == u {
		a.order = append(a.order[1:], u)
	}
}
