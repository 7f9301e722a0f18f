package peer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"time"

	"github.com/cairnkv/cairn/server/metrics"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

var errNoSnapshotStore = errors.New("peer: no snapshot store configured")

// checkPost answers what every POST endpoint checks first; false means the
// request has been answered.
func (t *Transport) checkPost(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return false
	}
	w.Header().Set(hdrClusterID, idString(t.cfg.ClusterID))
	if err := t.checkCompatibility(r.Header); err != nil {
		http.Error(w, err.Error(), http.StatusPreconditionFailed)
		return false
	}
	return true
}

// servePipeline receives one marshaled message (POST /raft).
func (t *Transport) servePipeline(w http.ResponseWriter, r *http.Request) {
	if !t.checkPost(w, r) {
		return
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxStreamMessageBytes+1))
	if err != nil || len(b) > maxStreamMessageBytes {
		http.Error(w, "error reading raft message", http.StatusBadRequest)
		return
	}
	m := &raftpb.Message{}
	if err := proto.Unmarshal(b, m); err != nil {
		metrics.PeerReceivedFailures.WithLabelValues(r.Header.Get(hdrFrom)).Inc()
		http.Error(w, "error unmarshalling raft message", http.StatusBadRequest)
		return
	}
	from := metrics.ID(m.GetFrom())
	metrics.PeerReceivedBytes.WithLabelValues(from).Add(float64(len(b)))
	if err := t.process(r.Context(), m); err != nil {
		metrics.PeerReceivedFailures.WithLabelValues(from).Inc()
		writeProcessError(w, err, "error processing raft message")
		t.lg.Warn("failed to process raft message", zap.Error(err))
		return
	}
	// Answer only once raft has the message, so a sender's success means
	// it was stepped.
	w.WriteHeader(http.StatusNoContent)
}

// writeProcessError answers a message raft did not take: 403 with a JSON
// body for a removed sender (what etcd members answer), 500 otherwise.
func writeProcessError(w http.ResponseWriter, err error, msg string) {
	if errors.Is(err, errRemovedSender) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(struct {
			Message string `json:"message"`
		}{err.Error()})
		return
	}
	http.Error(w, msg, http.StatusInternalServerError)
}

// serveSnapshot receives a MsgSnap followed by the database
// (POST /raft/snapshot) and saves the database before raft sees the
// message.
func (t *Transport) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	if !t.checkPost(w, r) {
		return
	}
	m, err := (&messageDecoder{r: r.Body, limit: maxSnapshotMessageBytes}).decode()
	if err != nil {
		http.Error(w, fmt.Sprintf("failed to decode raft message (%v)", err), http.StatusBadRequest)
		return
	}
	if m.GetType() != raftpb.MsgSnap {
		http.Error(w, "wrong raft message type", http.StatusBadRequest)
		return
	}
	index := m.GetSnapshot().GetMetadata().GetIndex()
	from := metrics.ID(m.GetFrom())
	lg := t.lg.With(zap.String("remote-snapshot-sender-id", from), zap.Uint64("incoming-snapshot-index", index))
	lg.Info("receiving database snapshot")
	inflight := metrics.SnapshotReceiveInflight.WithLabelValues(from)
	inflight.Inc()
	defer inflight.Dec()
	start := time.Now()
	if err := t.receiveSnapshot(w, r, m, lg); err != nil {
		metrics.SnapshotReceiveFailures.WithLabelValues(from).Inc()
		return
	}
	metrics.SnapshotReceiveSuccess.WithLabelValues(from).Inc()
	metrics.SnapshotReceiveSeconds.WithLabelValues(from).Observe(time.Since(start).Seconds())
	lg.Info("received and saved database snapshot")
	w.WriteHeader(http.StatusNoContent)
}

// receiveSnapshot saves the database that follows MsgSnap m and steps m;
// on failure it has answered the request.
func (t *Transport) receiveSnapshot(w http.ResponseWriter, r *http.Request, m *raftpb.Message, lg *zap.Logger) error {
	body := countingReader{r.Body, byteCounter{metrics.PeerReceivedBytes.WithLabelValues(metrics.ID(m.GetFrom()))}}
	if err := t.saveSnapshotDB(body, m.GetSnapshot().GetMetadata().GetIndex()); err != nil {
		lg.Warn("failed to save incoming database snapshot", zap.Error(err))
		http.Error(w, fmt.Sprintf("failed to save KV snapshot (%v)", err), http.StatusInternalServerError)
		return err
	}
	if err := t.process(r.Context(), m); err != nil {
		lg.Warn("failed to process snapshot message", zap.Error(err))
		writeProcessError(w, err, fmt.Sprintf("failed to process raft message (%v)", err))
		return err
	}
	return nil
}

func (t *Transport) saveSnapshotDB(r io.Reader, index uint64) error {
	if t.cfg.Snapshots == nil {
		return errNoSnapshotStore
	}
	_, err := t.cfg.Snapshots.SaveSnapshotDB(r, index)
	return err
}

// serveStream accepts a stream the remote opens to receive our messages
// (GET /raft/stream/{msgapp,message}/<remoteID>) and holds the request open while
// the peer's stream writer uses it.
func (t *Transport) serveStream(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set(hdrServerVersion, t.cfg.ServerVersion)
	w.Header().Set(hdrClusterID, idString(t.cfg.ClusterID))
	if err := t.checkCompatibility(r.Header); err != nil {
		http.Error(w, err.Error(), http.StatusPreconditionFailed)
		return
	}
	writer, status, msg := t.streamWriterFor(r)
	if writer == nil {
		http.Error(w, msg, status)
		return
	}
	w.WriteHeader(http.StatusOK)
	if err := http.NewResponseController(w).Flush(); err != nil {
		return
	}
	conn := newOutgoingConn(w, t.cfg.ConnWriteTimeout)
	if !writer.attach(conn) {
		return
	}
	select {
	case <-conn.done:
	case <-r.Context().Done():
		conn.requestAbort()
		<-conn.done
	}
}

// streamWriterFor finds the writer a stream request is for, or the status
// and body to refuse it with.
func (t *Transport) streamWriterFor(r *http.Request) (*streamWriter, int, string) {
	var typ streamType
	switch path.Dir(r.URL.Path) {
	case path.Dir(streamMsgAppV2.path(0)):
		typ = streamMsgAppV2
	case path.Dir(streamMessage.path(0)):
		typ = streamMessage
	default:
		return nil, http.StatusNotFound, "invalid path"
	}
	from, err := parseID(path.Base(r.URL.Path))
	if err != nil {
		return nil, http.StatusNotFound, "invalid from"
	}
	if t.cfg.Raft.IsIDRemoved(from) {
		t.lg.Warn("rejected stream from removed member", zap.String("remote-peer-id", idString(from)))
		return nil, http.StatusGone, "removed member"
	}
	p := t.peer(from)
	if p == nil {
		t.lg.Warn("rejected stream from unknown member", zap.String("remote-peer-id", idString(from)))
		return nil, http.StatusNotFound, "error sender not found"
	}
	if to := r.Header.Get(hdrTo); to != idString(t.cfg.ID) {
		t.lg.Warn("rejected stream for another member", zap.String("remote-peer-id", idString(from)), zap.String("to", to))
		return nil, http.StatusPreconditionFailed, "to field mismatch"
	}
	if typ == streamMsgAppV2 {
		return p.msgAppWriter, 0, ""
	}
	return p.msgWriter, 0, ""
}

// serveProbing answers health probes (GET /raft/probing) in the JSON form
// etcd's prober expects.
func serveProbing(w http.ResponseWriter, _ *http.Request) {
	_ = json.NewEncoder(w).Encode(struct {
		OK  bool
		Now time.Time
	}{true, time.Now()})
}
