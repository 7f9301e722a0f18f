package peer

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/cairnkv/cairn/pkg/defaults"
	"github.com/cairnkv/cairn/server/metrics"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
)

// Defaults for Config fields left zero.
const (
	DefaultDialTimeout       = time.Second
	DefaultConnTimeout       = 5 * time.Second // etcd's raft read and write timeouts
	DefaultServerVersion     = "3.7.0"
	DefaultMinClusterVersion = "3.0.0"
)

// Raft is the member's raft node as the transport sees it. Its methods are
// called from transport goroutines, never from inside Send, so they may
// wait for the raft loop that calls Send.
type Raft interface {
	// Process steps a message received from a peer into raft.
	Process(ctx context.Context, m *raftpb.Message) error
	// IsIDRemoved reports whether id was removed from the cluster; such a
	// member's requests are refused.
	IsIDRemoved(id uint64) bool
	// ReportUnreachable tells raft that a message to id was lost.
	ReportUnreachable(id uint64)
	// ReportSnapshot tells raft how sending a snapshot to id ended.
	ReportSnapshot(id uint64, status raft.SnapshotStatus)
}

// SnapshotStore is the member's side of snapshot transfer.
type SnapshotStore interface {
	// OpenSnapshot returns the database to send with MsgSnap m and its size
	// in bytes (negative if unknown).
	OpenSnapshot(m *raftpb.Message) (io.ReadCloser, int64, error)
	// SaveSnapshotDB stores a received database for the snapshot at index
	// before its MsgSnap is stepped into raft.
	SaveSnapshotDB(r io.Reader, index uint64) (int64, error)
}

// Config wires a Transport.
type Config struct {
	ID, ClusterID uint64
	// URLs are this member's own peer URLs, advertised to peers.
	URLs      []string
	Raft      Raft
	Snapshots SnapshotStore // nil: snapshots cannot be sent or received
	Logger    *zap.Logger
	// DialTimeout bounds connecting to a peer.
	DialTimeout time.Duration
	// ConnReadTimeout and ConnWriteTimeout (--raft-read-timeout and
	// --raft-write-timeout) bound how long a raft message stream may go
	// without reading or writing anything; 0 means DefaultConnTimeout.
	ConnReadTimeout, ConnWriteTimeout time.Duration
	// TLS is the client configuration for https peer URLs.
	TLS *tls.Config
	// LocalAddr is the IP outgoing peer connections are made from (the
	// SetMemberLocalAddr feature gate); "" lets the system choose.
	LocalAddr string
	// ServerVersion and MinClusterVersion are sent as X-Server-Version and
	// X-Min-Cluster-Version and judge a remote's versions.
	ServerVersion, MinClusterVersion string
}

// Transport sends raft messages to peers and serves the peer endpoints
// that receive them. Create it with New, then Start it.
type Transport struct {
	cfg        Config
	lg         *zap.Logger
	server     majorMinor
	minCluster majorMinor
	clients    clients
	reports    *reporter
	errc       chan error

	mu      sync.RWMutex
	peers   map[uint64]*peer
	started bool
	stopped bool
}

// New returns a Transport for cfg; nothing runs until Start.
func New(cfg Config) *Transport {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	cfg.DialTimeout = defaults.Positive(cfg.DialTimeout, DefaultDialTimeout)
	cfg.ConnReadTimeout = defaults.Positive(cfg.ConnReadTimeout, DefaultConnTimeout)
	cfg.ConnWriteTimeout = defaults.Positive(cfg.ConnWriteTimeout, DefaultConnTimeout)
	if cfg.ServerVersion == "" {
		cfg.ServerVersion = DefaultServerVersion
	}
	if cfg.MinClusterVersion == "" {
		cfg.MinClusterVersion = DefaultMinClusterVersion
	}
	return &Transport{
		cfg:   cfg,
		lg:    cfg.Logger.With(zap.String("local-member-id", idString(cfg.ID))),
		errc:  make(chan error, 1),
		peers: make(map[uint64]*peer),
	}
}

// Start validates the configuration and prepares the HTTP clients. Peers
// may be added once it has returned nil.
func (t *Transport) Start() error {
	if t.cfg.ID == 0 || t.cfg.Raft == nil {
		return errors.New("peer: Config needs ID and Raft")
	}
	var err error
	if t.server, err = parseMajorMinor(t.cfg.ServerVersion); err != nil {
		return err
	}
	if t.minCluster, err = parseMajorMinor(t.cfg.MinClusterVersion); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started || t.stopped {
		return errors.New("peer: Transport already started")
	}
	t.clients = newClients(t.cfg)
	metrics.PeerKnown.WithLabelValues(metrics.ID(t.cfg.ID), metrics.ID(t.cfg.ID)).Set(1)
	t.reports = newReporter(t.cfg.Raft)
	go t.reports.run()
	t.started = true
	return nil
}

// Stop stops every peer and waits for their goroutines; streams being
// served end. The Transport cannot be restarted.
func (t *Transport) Stop() {
	t.mu.Lock()
	peers := t.peers
	t.peers = map[uint64]*peer{}
	wasRunning := t.started && !t.stopped
	t.stopped = true
	t.mu.Unlock()
	if !wasRunning {
		return
	}
	for _, p := range peers {
		p.stop()
	}
	t.reports.stop()
	t.clients.closeIdle()
}

// Errors delivers critical errors, today only ErrMemberRemoved; the member
// should stop when it receives one.
func (t *Transport) Errors() <-chan error { return t.errc }

func (t *Transport) reportCritical(err error) {
	select {
	case t.errc <- err:
	default:
	}
}

// AddPeer starts talking to member id at urls; adding a known peer or
// adding before Start or after Stop does nothing.
func (t *Transport) AddPeer(id uint64, urls []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.started || t.stopped || t.peers[id] != nil || id == t.cfg.ID {
		return
	}
	p, err := newPeer(t, id, urls)
	if err != nil {
		t.lg.Warn("failed to add peer", zap.String("remote-peer-id", idString(id)), zap.Error(err))
		return
	}
	t.peers[id] = p
	p.start()
	t.lg.Info("added remote peer", zap.String("remote-peer-id", idString(id)), zap.Strings("remote-peer-urls", urls))
}

// RemovePeer stops talking to member id and waits until its goroutines
// have ended.
func (t *Transport) RemovePeer(id uint64) {
	t.mu.Lock()
	p := t.peers[id]
	delete(t.peers, id)
	t.mu.Unlock()
	if p != nil {
		p.stop()
		t.lg.Info("removed remote peer", zap.String("remote-peer-id", idString(id)))
	}
}

// UpdatePeer replaces the URLs member id is reached at.
func (t *Transport) UpdatePeer(id uint64, urls []string) {
	if p := t.peer(id); p != nil {
		if err := p.urls.replace(urls); err != nil {
			t.lg.Warn("failed to update peer URLs", zap.String("remote-peer-id", idString(id)), zap.Error(err))
		}
	}
}

// ActiveSince returns when the connection to member id last became
// healthy, or the zero time if it is not.
func (t *Transport) ActiveSince(id uint64) time.Time {
	if p := t.peer(id); p != nil {
		return p.status.activeSince()
	}
	return time.Time{}
}

// Send queues msgs for their peers and returns at once. A message that
// does not fit its queue is dropped and reported unreachable; messages to
// unknown peers are dropped.
func (t *Transport) Send(msgs []*raftpb.Message) {
	for _, m := range msgs {
		to := m.GetTo()
		if to == 0 {
			continue
		}
		p := t.peer(to)
		if p == nil {
			t.lg.Debug("dropped message to unknown peer", zap.String("remote-peer-id", idString(to)))
			continue
		}
		p.send(m)
	}
}

func (t *Transport) peer(id uint64) *peer {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.peers[id]
}

// process hands m to raft unless its sender has been removed.
func (t *Transport) process(ctx context.Context, m *raftpb.Message) error {
	if t.cfg.Raft.IsIDRemoved(m.GetFrom()) {
		return errRemovedSender
	}
	return t.cfg.Raft.Process(ctx, m)
}

// Handler serves the peer endpoints: /raft, /raft/stream/, /raft/snapshot
// and /raft/probing. Other paths get 404, so the member may serve its own
// endpoints next to them.
func (t *Transport) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(pipelinePath, t.servePipeline)
	mux.HandleFunc(streamPathPrefix, t.serveStream)
	mux.HandleFunc(snapshotPath, t.serveSnapshot)
	mux.HandleFunc(probingPath, serveProbing)
	return mux
}
