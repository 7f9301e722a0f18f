package peer

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/cairnkv/cairn/server/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// probeInterval is how often a peer's /raft/probing endpoint is probed for
// the round-trip-time histogram (etcd's prober interval).
const probeInterval = 4 * time.Second

// peerMetrics are one peer's series, resolved once when the peer is added
// so that the message paths only do atomic adds.
type peerMetrics struct {
	local, remote string

	sentBytes, receivedBytes     prometheus.Counter
	sentFailures, receivedFailed prometheus.Counter
	active                       prometheus.Gauge
	disconnected                 prometheus.Counter
	rtt                          prometheus.Observer
}

func newPeerMetrics(local, remote uint64) *peerMetrics {
	l, r := metrics.ID(local), metrics.ID(remote)
	metrics.PeerKnown.WithLabelValues(l, r).Set(1)
	return &peerMetrics{
		local: l, remote: r,
		sentBytes:      metrics.PeerSentBytes.WithLabelValues(r),
		receivedBytes:  metrics.PeerReceivedBytes.WithLabelValues(r),
		sentFailures:   metrics.PeerSentFailures.WithLabelValues(r),
		receivedFailed: metrics.PeerReceivedFailures.WithLabelValues(r),
		active:         metrics.PeerActive.WithLabelValues(l, r),
		disconnected:   metrics.PeerDisconnected.WithLabelValues(l, r),
		rtt:            metrics.PeerRoundTrip.WithLabelValues(r),
	}
}

// forget drops the series that describe the peer as present; a removed
// peer is neither known nor active. Counters stay, as in etcd.
func (m *peerMetrics) forget() {
	metrics.PeerKnown.DeleteLabelValues(m.local, m.remote)
	metrics.PeerActive.DeleteLabelValues(m.local, m.remote)
}

// byteCounter adds to a counter the bytes each Read or Write of the
// reader or writer it is part of moves.
type byteCounter struct{ c prometheus.Counter }

func (bc byteCounter) count(n int, err error) (int, error) {
	bc.c.Add(float64(n))
	return n, err
}

// countingWriter is w, counting what is written.
type countingWriter struct {
	w io.Writer
	byteCounter
}

func (cw countingWriter) Write(b []byte) (int, error) { return cw.count(cw.w.Write(b)) }

// countingReader is r, counting what is read.
type countingReader struct {
	r io.Reader
	byteCounter
}

func (cr countingReader) Read(b []byte) (int, error) { return cr.count(cr.r.Read(b)) }

// probe measures the round trip to the peer's /raft/probing endpoint every
// probeInterval until the peer stops. A failed probe records nothing: the
// histogram is about healthy links, failures show in active_peers.
func (p *peer) probe() {
	tick := time.NewTicker(probeInterval)
	defer tick.Stop()
	for {
		p.probeOnce()
		select {
		case <-tick.C:
		case <-p.ctx.Done():
			return
		}
	}
}

func (p *peer) probeOnce() {
	ctx, cancel := context.WithTimeout(p.ctx, probeInterval)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, withPath(p.urls.current(), probingPath), nil)
	if err != nil {
		return
	}
	start := time.Now()
	resp, err := p.t.clients.pipeline.Do(req)
	if err != nil {
		return
	}
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBody))
	resp.Body.Close()
	if err == nil && resp.StatusCode == http.StatusOK {
		p.m.rtt.Observe(time.Since(start).Seconds())
	}
}
