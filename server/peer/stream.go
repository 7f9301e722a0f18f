package peer

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/failpoint"
	"github.com/cairnkv/cairn/pkg/wait"
)

// streamType names a stream by its path element.
type streamType string

const (
	streamMsgAppV2 streamType = "msgappv2"
	streamMessage  streamType = "message"
)

// Reconnect backoff of a stream reader.
const (
	minRedialDelay = 100 * time.Millisecond
	maxRedialDelay = time.Second
)

// path is where the stream to member from is opened. The msgappv2
// stream lives at .../msgapp/<from> (the name it had before its v2
// encoding).
func (typ streamType) path(from uint64) string {
	elem := string(typ)
	if typ == streamMsgAppV2 {
		elem = "msgapp"
	}
	return streamPathPrefix + elem + "/" + idString(from)
}

func (typ streamType) encoder(w io.Writer) encoder {
	if typ == streamMsgAppV2 {
		return newMsgAppV2Encoder(w)
	}
	return &messageEncoder{w: w}
}

func (typ streamType) decoder(r io.Reader, local, remote uint64) decoder {
	if typ == streamMsgAppV2 {
		return newMsgAppV2Decoder(r, local, remote)
	}
	return &messageDecoder{r: r, limit: maxStreamMessageBytes}
}

// outgoingConn is the response of a stream request the remote opened: our
// messages to it are written there. The handler serving the request
// waits on done; the writer closes done once it stops using the conn.
type outgoingConn struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	timeout   time.Duration // write deadline of each Write
	abort     chan struct{} // closed by the handler when the request ends
	abortOnce sync.Once
	done      chan struct{}
}

func newOutgoingConn(w http.ResponseWriter, writeTimeout time.Duration) *outgoingConn {
	return &outgoingConn{w: w, rc: http.NewResponseController(w), timeout: writeTimeout,
		abort: make(chan struct{}), done: make(chan struct{})}
}

// Write writes to the response with a write deadline, so a peer that
// stops reading cannot hold the writer.
func (c *outgoingConn) Write(b []byte) (int, error) {
	_ = c.rc.SetWriteDeadline(time.Now().Add(c.timeout)) // unsupported writers just get no deadline
	return c.w.Write(b)
}

func (c *outgoingConn) flush() error { return c.rc.Flush() }

func (c *outgoingConn) requestAbort() { c.abortOnce.Do(func() { close(c.abort) }) }

// streamWriter writes queued messages to the stream the remote opened.
type streamWriter struct {
	p     *peer
	typ   streamType
	connc chan *outgoingConn

	mu     sync.Mutex
	msgc   chan *raftpb.Message
	up     bool // a stream is attached and msgc feeds it
	opened int  // streams accepted so far
}

func newStreamWriter(p *peer, typ streamType) *streamWriter {
	return &streamWriter{p: p, typ: typ, connc: make(chan *outgoingConn),
		msgc: make(chan *raftpb.Message, streamQueueSize)}
}

// sendQueue is the queue of the stream that is up, nil while none is.
func (w *streamWriter) sendQueue() chan<- *raftpb.Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.up {
		return nil
	}
	return w.msgc
}

// streamsOpened counts the streams the writer has accepted.
func (w *streamWriter) streamsOpened() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.opened
}

// attach hands a freshly accepted stream to the writer; false means the
// peer is stopping.
func (w *streamWriter) attach(c *outgoingConn) bool {
	select {
	case w.connc <- c:
		return true
	case <-w.p.ctx.Done():
		return false
	}
}

// streamWriterState is what the writer's loop holds for the current conn.
type streamWriterState struct {
	conn    *outgoingConn
	enc     encoder
	msgc    chan *raftpb.Message
	batched int
}

func (w *streamWriter) run() {
	tick := time.NewTicker(w.p.t.cfg.ConnReadTimeout / 3)
	defer tick.Stop()
	var st streamWriterState
	for {
		var heartbeatc <-chan time.Time
		var abort <-chan struct{}
		if st.conn != nil {
			heartbeatc, abort = tick.C, st.conn.abort
		}
		select {
		case <-heartbeatc:
			if err := st.write(linkHeartbeat(), true); err != nil {
				w.close(&st, err)
			}
		case m := <-st.msgc:
			if err := st.write(m, len(st.msgc) == 0 || st.batched > streamQueueSize/2); err != nil {
				w.p.m.sentFailures.Inc()
				w.close(&st, err)
				w.p.t.reports.reportUnreachable(w.p.id)
			}
		case c := <-w.connc:
			w.close(&st, nil)
			w.open(&st, c)
		case <-abort:
			w.close(&st, errors.New("stream closed by peer"))
		case <-w.p.ctx.Done():
			w.close(&st, nil)
			return
		}
	}
}

// write encodes m and flushes when asked to; unflushed writes batch up.
func (st *streamWriterState) write(m *raftpb.Message, flush bool) error {
	failpoint.Inject("peerBeforeStreamSend")
	if err := st.enc.encode(m); err != nil {
		return err
	}
	if !flush {
		st.batched++
		return nil
	}
	st.batched = 0
	return st.conn.flush()
}

func (w *streamWriter) open(st *streamWriterState, c *outgoingConn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	*st = streamWriterState{conn: c, enc: w.typ.encoder(countingWriter{c, byteCounter{w.p.m.sentBytes}}), msgc: w.msgc}
	w.up = true
	w.opened++
	w.p.status.activate()
	w.p.lg.Info("established stream writer", zap.String("stream-type", string(w.typ)))
}

// close gives up the current conn, if any; messages still queued for it
// are dropped (raft is told the peer is unreachable) so that a new stream
// starts clean.
func (w *streamWriter) close(st *streamWriterState, err error) {
	if st.conn == nil {
		return
	}
	w.mu.Lock()
	dropped := len(w.msgc) > 0
	w.msgc = make(chan *raftpb.Message, streamQueueSize)
	w.up = false
	w.mu.Unlock()
	if dropped {
		w.p.t.reports.reportUnreachable(w.p.id)
	}
	_ = st.conn.rc.SetWriteDeadline(time.Time{}) // the connection may serve other requests
	close(st.conn.done)
	if err != nil {
		w.p.status.deactivate(string(w.typ)+" stream write", err)
	}
	w.p.lg.Info("closed stream writer", zap.String("stream-type", string(w.typ)), zap.Error(err))
	*st = streamWriterState{}
}

// streamReader keeps a stream from the remote open and hands what arrives
// to the peer's receive queues.
type streamReader struct {
	p   *peer
	typ streamType
}

func (r *streamReader) run() {
	delay := minRedialDelay
	for {
		body, err := r.dial()
		if err == nil {
			r.p.status.activate()
			delay = minRedialDelay
			err = r.readAll(body)
			body.Close()
		}
		if r.p.ctx.Err() != nil {
			return
		}
		if err != nil && !errors.Is(err, io.EOF) {
			r.p.m.receivedFailed.Inc()
			r.p.status.deactivate(string(r.typ)+" stream read", err)
		}
		if !wait.Sleep(r.p.ctx, delay) {
			return
		}
		delay = min(2*delay, maxRedialDelay)
	}
}

// dial opens the remote's stream to us and returns its body.
func (r *streamReader) dial() (io.ReadCloser, error) {
	u := r.p.urls.current()
	req, err := http.NewRequestWithContext(r.p.ctx, http.MethodGet,
		withPath(u, r.typ.path(r.p.t.cfg.ID)), nil)
	if err != nil {
		return nil, err
	}
	r.p.t.setIdentity(req.Header)
	req.Header.Set(hdrTo, idString(r.p.id))
	resp, err := r.p.t.clients.stream.Do(req)
	if err != nil {
		r.p.urls.failed(u)
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return resp.Body, nil
	}
	err = streamDialError(resp)
	r.p.failed(u, "dial "+string(r.typ)+" stream", err)
	if errors.Is(err, ErrClusterIDMismatch) {
		r.p.lg.Warn("stream refused by peer: cluster ID mismatch",
			zap.String("remote-peer-cluster-id", resp.Header.Get(hdrClusterID)),
			zap.String("local-member-cluster-id", idString(r.p.t.cfg.ClusterID)))
	}
	return nil, err
}

// streamDialError reads a refused stream response and closes it.
func streamDialError(resp *http.Response) error {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch resp.StatusCode {
	case http.StatusGone:
		return ErrMemberRemoved
	case http.StatusNotFound:
		return errors.New("peer does not know this member")
	case http.StatusPreconditionFailed:
		return preconditionError(body)
	default:
		return fmt.Errorf("unhandled http status %d", resp.StatusCode)
	}
}

// streamReadBufferBytes is what a stream reader takes from the response
// body at once. The decoders read a few bytes at a time (a length, a type,
// one entry), and each read of the body itself goes through the chunked
// decoding, its lock and the byte counter; a batch of appends arrives in
// one buffer fill instead.
const streamReadBufferBytes = 16 << 10

// readAll decodes messages until the stream ends. A full receive queue
// drops the message, as raft will resend.
func (r *streamReader) readAll(body io.Reader) error {
	in := bufio.NewReaderSize(countingReader{body, byteCounter{r.p.m.receivedBytes}}, streamReadBufferBytes)
	dec := r.typ.decoder(in, r.p.t.cfg.ID, r.p.id)
	for {
		m, err := dec.decode()
		if err != nil {
			return err
		}
		if isLinkHeartbeat(m) {
			continue
		}
		q := r.p.recvc
		if m.GetType() == raftpb.MsgProp {
			q = r.p.propc
		}
		select {
		case q <- m:
		default:
			r.p.lg.Warn("dropped raft message: receiving buffer is full",
				zap.String("message-type", m.GetType().String()))
		}
	}
}
