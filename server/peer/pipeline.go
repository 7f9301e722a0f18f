package peer

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/cairnkv/cairn/server/metrics"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/failpoint"
)

// maxResponseBody bounds the answer read back from a POST.
const maxResponseBody = 64 << 10

// pipeline posts one message per request while no stream is up.
type pipeline struct {
	p    *peer
	msgc chan *raftpb.Message
}

func (pl *pipeline) run() {
	for {
		select {
		case m := <-pl.msgc:
			pl.send(m)
		case <-pl.p.ctx.Done():
			return
		}
	}
}

func (pl *pipeline) send(m *raftpb.Message) {
	p := pl.p
	data, err := proto.Marshal(m)
	if err != nil {
		p.lg.Error("failed to marshal raft message", zap.Error(err))
		return
	}
	u := p.urls.current()
	err = p.post(u, pipelinePath, "application/protobuf", bytes.NewReader(data), int64(len(data)), p.t.clients.pipeline)
	if err != nil {
		if p.ctx.Err() != nil {
			return
		}
		p.m.sentFailures.Inc()
		p.failed(u, "pipeline post", err)
		p.t.reports.reportUnreachable(p.id)
		return
	}
	p.m.sentBytes.Add(float64(len(data)))
	p.status.activate()
}

// post sends body to path on u and interprets the answer; size < 0 means
// unknown (chunked).
func (p *peer) post(u url.URL, path, contentType string, body io.Reader, size int64, client *http.Client) error {
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, withPath(u, path), body)
	if err != nil {
		return err
	}
	if size >= 0 {
		req.ContentLength = size
	} else {
		req.ContentLength = -1
	}
	req.Header.Set("Content-Type", contentType)
	p.t.setIdentity(req.Header)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	// A peer that dies right after reading the request must not leave us
	// reading its answer forever.
	timer := time.AfterFunc(snapshotResponseLimit, cancel)
	defer timer.Stop()
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
	resp.Body.Close()
	if err != nil {
		return err
	}
	return postResult(resp, respBody, req.URL)
}

// sendSnapshot uploads MsgSnap m followed by the database and reports the
// outcome to raft.
func (p *peer) sendSnapshot(m *raftpb.Message) {
	failpoint.Inject("peerBeforeSendSnapshot")
	to := p.m.remote
	inflight := metrics.SnapshotSendInflight.WithLabelValues(to)
	inflight.Inc()
	start := time.Now()
	u := p.urls.current()
	err := p.uploadSnapshot(u, m)
	inflight.Dec() // before raft hears the outcome
	if err != nil {
		metrics.SnapshotSendFailures.WithLabelValues(to).Inc()
		p.lg.Warn("failed to send database snapshot",
			zap.Uint64("snapshot-index", m.GetSnapshot().GetMetadata().GetIndex()), zap.Error(err))
		p.failed(u, "snapshot post", err)
		p.t.reports.reportUnreachable(p.id)
		p.t.reports.reportSnapshot(p.id, raft.SnapshotFailure)
		return
	}
	metrics.SnapshotSendSuccess.WithLabelValues(to).Inc()
	metrics.SnapshotSendSeconds.WithLabelValues(to).Observe(time.Since(start).Seconds())
	p.status.activate()
	p.lg.Info("sent database snapshot", zap.Uint64("snapshot-index", m.GetSnapshot().GetMetadata().GetIndex()))
	p.t.reports.reportSnapshot(p.id, raft.SnapshotFinish)
}

func (p *peer) uploadSnapshot(u url.URL, m *raftpb.Message) error {
	if p.t.cfg.Snapshots == nil {
		return errNoSnapshotStore
	}
	head, err := marshalWithLength(m)
	if err != nil {
		return err
	}
	db, size, err := p.t.cfg.Snapshots.OpenSnapshot(m)
	if err != nil {
		return err
	}
	defer db.Close()
	total := int64(-1)
	if size >= 0 {
		total = int64(len(head)) + size
	}
	body := countingReader{io.MultiReader(bytes.NewReader(head), db), byteCounter{p.m.sentBytes}}
	return p.post(u, snapshotPath, "application/octet-stream", body, total, p.t.clients.snapshot)
}
