package raftnode

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
)

// Persister writes raft state to stable storage (the WAL and snap files).
type Persister interface {
	// Save appends entries and the hard state, fsyncing when needed.
	Save(st *raftpb.HardState, ents []*raftpb.Entry) error
	// SaveSnap persists a snapshot received from the leader.
	SaveSnap(snap *raftpb.Snapshot) error
}

// Transport delivers raft messages to peers. Single-member clusters use
// NopTransport.
type Transport interface {
	Send(msgs []*raftpb.Message)
}

// NopTransport drops every message; a one-member cluster sends none anyway.
type NopTransport struct{}

// Send drops msgs.
func (NopTransport) Send([]*raftpb.Message) {}

// ToApply is one batch of committed work for the apply loop.
type ToApply struct {
	Entries  []*raftpb.Entry
	Snapshot *raftpb.Snapshot // nil or empty when there is none
	// Persisted is closed once the Ready these came from is in the WAL.
	// raft may hand out committed entries this member has not yet fsynced
	// itself (a quorum of others has); the apply loop must wait on it
	// before applying an entry above LastPersisted, so the backend never
	// holds an entry the local WAL lacks.
	Persisted <-chan struct{}
}

// Config wires a Node.
type Config struct {
	ID           uint64
	Logger       *zap.Logger
	Raft         raft.Node
	MemStorage   *raft.MemoryStorage
	Persister    Persister
	Transport    Transport
	TickInterval time.Duration
}

// Node owns the raft Ready loop.
type Node struct {
	cfg        Config
	lg         *zap.Logger
	applyc     chan ToApply
	readStatec chan raft.ReadState
	lead       atomic.Uint64
	term       atomic.Uint64
	committed  atomic.Uint64
	persisted  atomic.Uint64 // index of the last entry in the WAL
	leaderc    chan struct{} // closed and replaced when the leader changes
	leaderMu   sync.Mutex
	stopc      chan struct{}
	donec      chan struct{}
	errc       chan error
}

// New returns a Node; call Start to run its loop.
func New(cfg Config) *Node {
	if cfg.Transport == nil {
		cfg.Transport = NopTransport{}
	}
	return &Node{
		cfg:        cfg,
		lg:         cfg.Logger,
		applyc:     make(chan ToApply, 64),
		readStatec: make(chan raft.ReadState, 1),
		leaderc:    make(chan struct{}),
		stopc:      make(chan struct{}),
		donec:      make(chan struct{}),
		errc:       make(chan error, 1),
	}
}

// Start runs the Ready loop in its own goroutine.
func (n *Node) Start() { go n.run() }

// Stop ends the loop and stops raft. Safe to call once.
func (n *Node) Stop() {
	close(n.stopc)
	<-n.donec
	n.cfg.Raft.Stop()
}

// Apply delivers committed entries in log order.
func (n *Node) Apply() <-chan ToApply { return n.applyc }

// ReadStates delivers the newest ReadIndex results.
func (n *Node) ReadStates() <-chan raft.ReadState { return n.readStatec }

// Errors reports a fatal persistence error; the member must stop.
func (n *Node) Errors() <-chan error { return n.errc }

// Done is closed when the loop has exited.
func (n *Node) Done() <-chan struct{} { return n.donec }

// Leader is the ID of the current leader as far as this member knows (0 = none).
func (n *Node) Leader() uint64 { return n.lead.Load() }

// Term is the latest raft term this member has persisted.
func (n *Node) Term() uint64 { return n.term.Load() }

// LastPersisted is the index of the newest entry written to the WAL.
func (n *Node) LastPersisted() uint64 { return n.persisted.Load() }

// SetLastPersisted records what the WAL held at start.
func (n *Node) SetLastPersisted(i uint64) { n.persisted.Store(i) }

// Committed is the newest commit index this member has persisted.
func (n *Node) Committed() uint64 { return n.committed.Load() }

// LeaderChanged returns a channel closed at the next change of leader.
func (n *Node) LeaderChanged() <-chan struct{} {
	n.leaderMu.Lock()
	defer n.leaderMu.Unlock()
	return n.leaderc
}

// Raft exposes the underlying raft node for Propose, ReadIndex, Status,
// Campaign and ApplyConfChange.
func (n *Node) Raft() raft.Node { return n.cfg.Raft }

func (n *Node) run() {
	defer close(n.donec)
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			n.cfg.Raft.Tick()
		case rd := <-n.cfg.Raft.Ready():
			if err := n.handleReady(rd); err != nil {
				n.lg.Error("failed to persist raft state", zap.Error(err))
				n.errc <- err
				return
			}
		case <-n.stopc:
			return
		}
	}
}

func (n *Node) handleReady(rd raft.Ready) error {
	if rd.SoftState != nil {
		n.setLeader(rd.SoftState.Lead)
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		n.term.Store(rd.HardState.GetTerm())
		n.committed.Store(rd.HardState.GetCommit())
	}
	if len(rd.ReadStates) > 0 {
		n.publishReadState(rd.ReadStates[len(rd.ReadStates)-1])
	}
	hasSnapshot := !raft.IsEmptySnap(rd.Snapshot)
	persisted := make(chan struct{})
	// Committed entries go to the apply loop before this Ready's new
	// entries are fsynced, so applying batch N overlaps persisting batch
	// N+1 (the apply loop waits on persisted only for entries above
	// LastPersisted). A snapshot must be on disk before anything applies it.
	if !hasSnapshot && !n.handOff(rd, persisted) {
		return nil
	}
	isLeader := n.Leader() == n.cfg.ID
	if isLeader {
		n.cfg.Transport.Send(rd.Messages)
	}
	if err := n.persist(rd); err != nil {
		return err
	}
	if len(rd.Entries) > 0 {
		n.persisted.Store(rd.Entries[len(rd.Entries)-1].GetIndex())
	} else if hasSnapshot {
		n.persisted.Store(rd.Snapshot.GetMetadata().GetIndex())
	}
	close(persisted)
	if !isLeader {
		n.cfg.Transport.Send(rd.Messages)
	}
	if hasSnapshot && !n.handOff(rd, persisted) {
		return nil
	}
	n.cfg.Raft.Advance()
	return nil
}

// handOff gives committed work to the apply loop; false means stopping.
func (n *Node) handOff(rd raft.Ready, persisted <-chan struct{}) bool {
	if len(rd.CommittedEntries) == 0 && raft.IsEmptySnap(rd.Snapshot) {
		return true
	}
	select {
	case n.applyc <- ToApply{Entries: rd.CommittedEntries, Snapshot: rd.Snapshot, Persisted: persisted}:
		return true
	case <-n.stopc:
		return false
	}
}

func (n *Node) persist(rd raft.Ready) error {
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := n.cfg.Persister.SaveSnap(rd.Snapshot); err != nil {
			return err
		}
	}
	if err := n.cfg.Persister.Save(rd.HardState, rd.Entries); err != nil {
		return err
	}
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := n.cfg.MemStorage.ApplySnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		if err := n.cfg.MemStorage.SetHardState(rd.HardState); err != nil {
			return err
		}
	}
	return n.cfg.MemStorage.Append(rd.Entries)
}

func (n *Node) publishReadState(rs raft.ReadState) {
	// Only the newest matters: drop a stale unread one rather than block raft.
	select {
	case n.readStatec <- rs:
	default:
		select {
		case <-n.readStatec:
		default:
		}
		n.readStatec <- rs
	}
}

func (n *Node) setLeader(lead uint64) {
	if n.lead.Swap(lead) == lead {
		return
	}
	n.lg.Info("raft leader changed", zap.String("leader", idString(lead)))
	n.leaderMu.Lock()
	close(n.leaderc)
	n.leaderc = make(chan struct{})
	n.leaderMu.Unlock()
}

// Propose submits data to raft.
func (n *Node) Propose(ctx context.Context, data []byte) error {
	return n.cfg.Raft.Propose(ctx, data)
}

func idString(id uint64) string {
	const hex = "0123456789abcdef"
	if id == 0 {
		return "0"
	}
	var b [16]byte
	i := len(b)
	for id > 0 {
		i--
		b[i] = hex[id&0xf]
		id >>= 4
	}
	return string(b[i:])
}

// MemStorage is raft's in-memory log, for snapshots and compaction.
func (n *Node) MemStorage() *raft.MemoryStorage { return n.cfg.MemStorage }
