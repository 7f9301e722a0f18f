package raftnode

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/failpoint"
	"github.com/cairnkv/cairn/pkg/wait"
	"github.com/cairnkv/cairn/server/metrics"
)

// ErrStopped is returned for work handed to a Node that has stopped.
var ErrStopped = errors.New("raftnode: stopped")

// ErrInboxFull is Step's answer when raft has not kept up with the messages
// peers sent: the message is dropped, which raft tolerates (the sender
// retries), rather than letting a stalled raft loop block peer readers.
var ErrInboxFull = errors.New("raftnode: dropped message, receive queue is full")

// inboxLimit bounds the messages received from peers and not yet stepped.
const inboxLimit = 4096

// Persister writes raft state to stable storage (the WAL and snap files).
type Persister interface {
	// Save appends entries and the hard state, fsyncing when needed.
	Save(st *raftpb.HardState, ents []*raftpb.Entry) error
	// SaveSnap persists a snapshot received from the leader.
	SaveSnap(snap *raftpb.Snapshot) error
	// Sync makes everything saved so far durable.
	Sync() error
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
	RawNode      *raft.RawNode
	MemStorage   *raft.MemoryStorage
	Persister    Persister
	Transport    Transport
	TickInterval time.Duration
}

// proposal is one entry waiting to be stepped into raft.
type proposal struct {
	// A proposal whose caller gave up (ctx ended or deadline passed) is
	// never stepped. The deadline is separate from ctx so that a caller
	// needs no context (and timer) of its own per proposal.
	ctx      context.Context
	deadline time.Time // zero: none
	data     []byte
	onDrop   func(error)
}

// expired returns why the proposal must not be stepped at now, nil if it
// may be.
func (p *proposal) expired(now time.Time) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	if !p.deadline.IsZero() && !now.Before(p.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Node owns the raft state machine (a RawNode) and its Ready loop. Every
// call into the RawNode happens on the loop's goroutine: proposals and
// messages from peers through batch queues (the hot path: one lock, no
// channel per item, and everything that arrived during one fsync is stepped
// before the next Ready), anything else as an operation run between Readys.
type Node struct {
	cfg Config
	lg  *zap.Logger
	rn  *raft.RawNode

	queueMu sync.Mutex
	props   []proposal
	inbox   []*raftpb.Message // from peers, in arrival order
	wake    chan struct{}     // something was queued
	opc     chan func(*raft.RawNode)
	// handedOver says this member's leadership transfer ended and it has
	// not learned the new leader yet; only the loop uses it.
	handedOver bool
	// lastTick is when the loop last ticked raft (unix nanoseconds); a
	// loop held up, by a stuck WAL write say, stops ticking.
	lastTick atomic.Int64

	applyc     chan ToApply
	readStatec chan raft.ReadState
	lead       atomic.Uint64
	term       atomic.Uint64
	committed  atomic.Uint64
	persisted  atomic.Uint64 // index of the last entry in the WAL
	leaderMu   sync.Mutex
	leaderc    chan struct{} // closed and replaced when the leader changes
	electedAt  time.Time     // when the current leader became known; guarded by leaderMu
	heartbeats heartbeatWatch

	started  atomic.Bool
	stopOnce sync.Once
	stopc    chan struct{}
	donec    chan struct{}
	errc     chan error
}

// New returns a Node; call Start to run its loop.
func New(cfg Config) *Node {
	if cfg.Transport == nil {
		cfg.Transport = NopTransport{}
	}
	return &Node{
		cfg:        cfg,
		lg:         cfg.Logger,
		rn:         cfg.RawNode,
		heartbeats: heartbeatWatch{interval: cfg.TickInterval}, // HeartbeatTick is 1
		wake:       make(chan struct{}, 1),
		opc:        make(chan func(*raft.RawNode)),
		applyc:     make(chan ToApply, 64),
		readStatec: make(chan raft.ReadState, 1),
		leaderc:    make(chan struct{}),
		stopc:      make(chan struct{}),
		donec:      make(chan struct{}),
		errc:       make(chan error, 1),
	}
}

// Start runs the Ready loop in its own goroutine.
func (n *Node) Start() {
	n.started.Store(true)
	go n.run()
}

// Started reports whether Start was called.
func (n *Node) Started() bool { return n.started.Load() }

// Stop ends the loop (if it ever started). Queued proposals are dropped
// with ErrStopped.
func (n *Node) Stop() {
	n.stopOnce.Do(func() {
		close(n.stopc)
		if !n.started.Load() {
			close(n.donec)
		}
	})
	<-n.donec
	n.dropQueued(ErrStopped)
}

// Apply delivers committed entries in log order.
func (n *Node) Apply() <-chan ToApply { return n.applyc }

// ReadStates delivers the newest ReadIndex results.
func (n *Node) ReadStates() <-chan raft.ReadState { return n.readStatec }

// Errors reports a fatal persistence error; the member must stop.
func (n *Node) Errors() <-chan error { return n.errc }

// Leader is the ID of the current leader as far as this member knows (0 = none).
func (n *Node) Leader() uint64 { return n.lead.Load() }

// LastTick is when the loop last ticked raft (its start before the first
// tick).
func (n *Node) LastTick() time.Time { return time.Unix(0, n.lastTick.Load()) }

// Term is the latest raft term this member has persisted.
func (n *Node) Term() uint64 { return n.term.Load() }

// Committed is the newest commit index this member has persisted.
func (n *Node) Committed() uint64 { return n.committed.Load() }

// LastPersisted is the index of the newest entry written to the WAL.
func (n *Node) LastPersisted() uint64 { return n.persisted.Load() }

// SetLastPersisted records what the WAL held at start.
func (n *Node) SetLastPersisted(i uint64) { n.persisted.Store(i) }

// MemStorage is raft's in-memory log, for snapshots and compaction.
func (n *Node) MemStorage() *raft.MemoryStorage { return n.cfg.MemStorage }

// LeaderChanged returns a channel closed at the next change of leader.
func (n *Node) LeaderChanged() <-chan struct{} {
	n.leaderMu.Lock()
	defer n.leaderMu.Unlock()
	return n.leaderc
}

// Propose queues data for raft. It does not wait: the proposer learns the
// outcome when the entry is applied, or through onDrop (called once) if raft
// refuses it. While no leader is known proposals stay queued, as raft.Node
// holds them, until a leader appears, ctx ends or the deadline (if not
// zero) passes; a proposal that has expired so by the time it would be
// stepped is dropped with ctx's error or context.DeadlineExceeded.
func (n *Node) Propose(ctx context.Context, deadline time.Time, data []byte, onDrop func(error)) {
	n.queueMu.Lock()
	n.props = append(n.props, proposal{ctx: ctx, deadline: deadline, data: data, onDrop: onDrop})
	n.queueMu.Unlock()
	n.notify()
	select {
	case <-n.donec:
		// The loop is gone and Stop may already have drained the queue.
		n.dropQueued(ErrStopped)
	default:
	}
}

// ReadIndex asks raft to confirm the commit index for a linearizable read;
// the answer arrives on ReadStates carrying rctx.
func (n *Node) ReadIndex(ctx context.Context, rctx []byte) error {
	return n.do(ctx, func(rn *raft.RawNode) { rn.ReadIndex(rctx) })
}

// Campaign makes this member start an election.
func (n *Node) Campaign(ctx context.Context) error {
	var err error
	if doErr := n.do(ctx, func(rn *raft.RawNode) { err = rn.Campaign() }); doErr != nil {
		return doErr
	}
	return err
}

// TransferLeadership asks the leader to hand over to transferee.
func (n *Node) TransferLeadership(ctx context.Context, transferee uint64) error {
	return n.do(ctx, func(rn *raft.RawNode) { rn.TransferLeader(transferee) })
}

// ApplyConfChange applies a committed conf change to raft's configuration.
func (n *Node) ApplyConfChange(cc raftpb.ConfChangeI) (*raftpb.ConfState, error) {
	var cs *raftpb.ConfState
	err := n.do(context.Background(), func(rn *raft.RawNode) { cs = rn.ApplyConfChange(cc) })
	return cs, err
}

// Step queues a message received from a peer for raft and returns at once.
// The loop steps every queued message before it looks for the next Ready,
// so the messages that arrive while it fsyncs cost one Ready together, and
// a peer's reader never waits for the loop. What raft itself refuses is
// logged by the loop: a peer can do nothing about it.
func (n *Node) Step(ctx context.Context, m *raftpb.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-n.donec:
		return ErrStopped
	default:
	}
	n.queueMu.Lock()
	full := len(n.inbox) >= inboxLimit
	if !full {
		n.inbox = append(n.inbox, m)
	}
	n.queueMu.Unlock()
	if full {
		return ErrInboxFull
	}
	n.notify()
	return nil
}

func (n *Node) notify() {
	wait.Wake(n.wake)
}

// stepInbox steps every message received from peers, in arrival order.
// Proposals that followers forwarded wait while this leader hands over its
// leadership (see holding) and are stepped as soon as it is over.
func (n *Node) stepInbox() {
	n.queueMu.Lock()
	msgs := n.inbox
	n.inbox = nil
	n.queueMu.Unlock()
	var held []*raftpb.Message
	// Only a message other than a proposal can end a transfer, so the
	// state is read again after those alone, not once per proposal.
	holding := n.holding()
	for _, m := range msgs {
		if m.GetType() == raftpb.MsgProp {
			if holding {
				held = append(held, m)
			} else {
				n.stepFromPeer(m)
			}
			continue
		}
		n.stepFromPeer(m)
		holding = n.holding()
	}
	if len(held) > 0 && !holding {
		// A message just stepped ended the transfer.
		for _, m := range held {
			n.stepFromPeer(m)
		}
		held = nil
	}
	if len(held) > 0 {
		n.queueMu.Lock()
		n.inbox = append(held, n.inbox...)
		n.queueMu.Unlock()
	}
}

func (n *Node) stepFromPeer(m *raftpb.Message) {
	if err := n.rn.Step(m); err != nil {
		n.lg.Debug("raft refused a message from a peer", zap.String("type", m.GetType().String()),
			zap.String("from", strconv.FormatUint(m.GetFrom(), 16)), zap.Error(err))
	}
}

// transferring reports whether this member leads and is handing its
// leadership over (MoveLeader, or the hand-over at stop). raft drops every
// proposal meanwhile, silently for one a follower forwarded, so its client
// would wait out its timeout; held until the transfer ends (it ends within
// an election timeout, either way), a proposal is then appended here or,
// once another member leads, forwarded to it. A dropped proposal was never
// appended, so holding it can never apply it twice.
func transferring(st raft.BasicStatus) bool {
	return st.RaftState == raft.StateLeader && st.LeadTransferee != 0
}

// holding reports whether proposals must wait: while this leader hands
// over its leadership (see transferring), and after it until the member
// knows the new leader. The transfer ends when the transferee's campaign
// reaches this member, which steps down knowing no leader yet; raft would
// drop a proposal then, a forwarded one silently.
func (n *Node) holding() bool { return n.holdingAt(n.rn.BasicStatus()) }

// holdingAt is holding for a status the caller already read.
func (n *Node) holdingAt(st raft.BasicStatus) bool {
	switch {
	case transferring(st):
		n.handedOver = true
	case st.Lead != raft.None:
		n.handedOver = false
	}
	return transferring(st) || (n.handedOver && st.Lead == raft.None)
}

// ReportUnreachable tells raft a peer could not be reached, so it probes
// instead of streaming appends to it.
func (n *Node) ReportUnreachable(id uint64) {
	n.do(context.Background(), func(rn *raft.RawNode) { rn.ReportUnreachable(id) })
}

// ReportSnapshot tells raft how sending a snapshot to a peer went.
func (n *Node) ReportSnapshot(id uint64, status raft.SnapshotStatus) {
	n.do(context.Background(), func(rn *raft.RawNode) { rn.ReportSnapshot(id, status) })
}

// ProposeConfChange proposes a membership change.
func (n *Node) ProposeConfChange(ctx context.Context, cc raftpb.ConfChangeI) error {
	var err error
	if doErr := n.do(ctx, func(rn *raft.RawNode) { err = rn.ProposeConfChange(cc) }); doErr != nil {
		return doErr
	}
	return err
}

// Status reports raft's view of the cluster.
func (n *Node) Status() (raft.Status, error) {
	var st raft.Status
	err := n.do(context.Background(), func(rn *raft.RawNode) { st = rn.Status() })
	return st, err
}

// do runs op on the raft goroutine and waits for it.
func (n *Node) do(ctx context.Context, op func(*raft.RawNode)) error {
	done := make(chan struct{})
	wrapped := func(rn *raft.RawNode) {
		op(rn)
		close(done)
	}
	select {
	case n.opc <- wrapped:
	case <-ctx.Done():
		return ctx.Err()
	case <-n.donec:
		return ErrStopped
	}
	select {
	case <-done:
		return nil
	case <-n.donec:
		return ErrStopped
	}
}

func (n *Node) run() {
	defer close(n.donec)
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	n.lastTick.Store(time.Now().UnixNano())
	for {
		select {
		case <-ticker.C:
			n.rn.Tick()
			n.lastTick.Store(time.Now().UnixNano())
			n.stepQueued() // proposals are held while there is no leader
		case <-n.wake:
			n.stepQueued()
		case op := <-n.opc:
			op(n.rn)
		case <-n.stopc:
			return
		}
		if !n.processReadys() {
			return
		}
		if n.Leader() != 0 && n.hasQueued() {
			// A leader just became known: step what was held meanwhile.
			n.stepProposals()
			if !n.processReadys() {
				return
			}
		}
	}
}

// stepQueued steps the peers' messages first: they may tell this member
// who leads, which the proposals need.
func (n *Node) stepQueued() {
	n.stepInbox()
	n.stepProposals()
}

func (n *Node) hasQueued() bool {
	n.queueMu.Lock()
	defer n.queueMu.Unlock()
	return len(n.props) > 0
}

// processReadys handles every Ready raft has; for a single member the
// commit of a persisted batch is ready at once, with no goroutine hop.
func (n *Node) processReadys() bool {
	for n.rn.HasReady() {
		rd := n.rn.Ready()
		stopped, err := n.handleReady(rd)
		if err != nil {
			n.lg.Error("failed to persist raft state", zap.Error(err))
			n.errc <- err
			return false
		}
		if stopped {
			return false
		}
		n.rn.Advance(rd)
	}
	return true
}

// stepProposals hands every queued proposal to raft in one message, once a
// leader is known and no leadership transfer is under way (see holding).
// It asks raft, not Leader: that is what the last Ready published, and a
// message stepped since may have left raft without a leader.
func (n *Node) stepProposals() {
	if st := n.rn.BasicStatus(); n.holdingAt(st) || st.Lead == raft.None {
		n.dropExpired()
		return
	}
	n.queueMu.Lock()
	queued := n.props
	n.props = nil
	n.queueMu.Unlock()
	batch := queued[:0]
	now := time.Now()
	for _, p := range queued {
		if err := p.expired(now); err != nil {
			p.onDrop(err)
			continue
		}
		batch = append(batch, p)
	}
	if len(batch) == 0 {
		return
	}
	ents := make([]*raftpb.Entry, len(batch))
	for i, p := range batch {
		ents[i] = &raftpb.Entry{Data: p.data}
	}
	err := n.rn.Step(&raftpb.Message{Type: raftpb.MsgProp.Enum(), From: proto.Uint64(n.cfg.ID), Entries: ents})
	if err != nil {
		for _, p := range batch {
			p.onDrop(err)
		}
	}
}

// dropExpired drops the queued proposals whose callers gave up.
func (n *Node) dropExpired() {
	n.queueMu.Lock()
	var expired []proposal
	kept := n.props[:0]
	now := time.Now()
	for _, p := range n.props {
		if p.expired(now) != nil {
			expired = append(expired, p)
		} else {
			kept = append(kept, p)
		}
	}
	clear(n.props[len(kept):])
	n.props = kept
	n.queueMu.Unlock()
	for _, p := range expired {
		p.onDrop(p.expired(now)) // once expired, a proposal stays so
	}
}

func (n *Node) dropQueued(err error) {
	n.queueMu.Lock()
	batch := n.props
	n.props = nil
	n.queueMu.Unlock()
	for _, p := range batch {
		p.onDrop(err)
	}
}

func (n *Node) handleReady(rd raft.Ready) (stopped bool, err error) {
	if rd.SoftState != nil {
		n.setLeader(rd.SoftState.Lead)
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		n.term.Store(rd.HardState.GetTerm())
		n.committed.Store(rd.HardState.GetCommit())
		metrics.ProposalsCommitted.Set(float64(rd.HardState.GetCommit()))
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
		return true, nil
	}
	isLeader := n.Leader() == n.cfg.ID
	n.heartbeats.observe(n.lg, isLeader, rd.Messages, time.Now())
	afterPersist := rd.Messages
	if isLeader {
		failpoint.Inject("raftBeforeLeaderSend")
		n.cfg.Transport.Send(rd.Messages)
		afterPersist = nil
	} else if now, acks := splitByDurability(rd.Messages); len(now) > 0 {
		n.cfg.Transport.Send(now)
		afterPersist = acks
	}
	if err := n.persist(rd); err != nil {
		return false, err
	}
	close(persisted)
	if len(afterPersist) > 0 {
		failpoint.Inject("raftBeforeFollowerSend")
		n.cfg.Transport.Send(afterPersist)
	}
	if hasSnapshot && !n.handOff(rd, persisted) {
		return true, nil
	}
	return false, nil
}

// splitByDurability separates the messages a follower may send at once
// from those that must wait for this Ready's fsync. Only answers that vote
// on a log append or an election acknowledge local state (the entries, the
// term and vote this Ready persists); raft itself holds exactly these back
// when storage writes are asynchronous. Everything else states nothing
// about this member's disk: sent at once, a forwarded proposal reaches the
// leader, and a heartbeat answer confirms a ReadIndex round, one fsync
// earlier.
func splitByDurability(msgs []*raftpb.Message) (now, afterPersist []*raftpb.Message) {
	for _, m := range msgs {
		switch m.GetType() {
		case raftpb.MsgAppResp, raftpb.MsgVoteResp, raftpb.MsgPreVoteResp:
			afterPersist = append(afterPersist, m)
		default:
			now = append(now, m)
		}
	}
	return now, afterPersist
}

// handOff gives committed work to the apply loop; false means stopping.
// While the apply loop is busy it keeps serving operations, because the
// apply loop itself may be waiting on one (ApplyConfChange).
func (n *Node) handOff(rd raft.Ready, persisted <-chan struct{}) bool {
	if len(rd.CommittedEntries) == 0 && raft.IsEmptySnap(rd.Snapshot) {
		return true
	}
	work := ToApply{Entries: rd.CommittedEntries, Snapshot: rd.Snapshot, Persisted: persisted}
	for {
		select {
		case n.applyc <- work:
			return true
		case op := <-n.opc:
			op(n.rn)
		case <-n.stopc:
			return false
		}
	}
}

func (n *Node) persist(rd raft.Ready) error {
	if !raft.IsEmptySnap(rd.Snapshot) {
		failpoint.Inject("raftBeforeSaveSnap")
		if err := n.cfg.Persister.SaveSnap(rd.Snapshot); err != nil {
			return err
		}
		failpoint.Inject("raftAfterSaveSnap")
	}
	failpoint.Inject("raftBeforeSave")
	if err := n.cfg.Persister.Save(rd.HardState, rd.Entries); err != nil {
		return err
	}
	failpoint.Inject("raftAfterSave")
	if !raft.IsEmptySnap(rd.Snapshot) {
		// The HardState that commits the snapshot needs no fsync by raft's
		// rules, but once this member acknowledges the snapshot the
		// leader counts on it: lost in a crash, the restarted member's
		// commit index would lag the leader's view of it and raft would
		// panic (tocommit out of range), as in etcd issue 10219. The WAL
		// also only vouches for snapshots at or below its commit index.
		if err := n.cfg.Persister.Sync(); err != nil {
			return err
		}
		failpoint.Inject("raftBeforeApplySnap")
		if err := n.cfg.MemStorage.ApplySnapshot(rd.Snapshot); err != nil {
			return err
		}
		failpoint.Inject("raftAfterApplySnap")
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		if err := n.cfg.MemStorage.SetHardState(rd.HardState); err != nil {
			return err
		}
	}
	if err := n.cfg.MemStorage.Append(rd.Entries); err != nil {
		return err
	}
	if len(rd.Entries) > 0 {
		n.persisted.Store(rd.Entries[len(rd.Entries)-1].GetIndex())
	} else if !raft.IsEmptySnap(rd.Snapshot) {
		n.persisted.Store(rd.Snapshot.GetMetadata().GetIndex())
	}
	return nil
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
	n.lg.Info("raft leader changed", zap.String("leader", strconv.FormatUint(lead, 16)))
	metrics.SetLeader(lead, n.cfg.ID, true)
	n.leaderMu.Lock()
	close(n.leaderc)
	n.leaderc = make(chan struct{})
	if lead != 0 {
		n.electedAt = time.Now()
	}
	n.leaderMu.Unlock()
}

// LeaderElectedAt is when the current leader became known to this member.
func (n *Node) LeaderElectedAt() time.Time {
	n.leaderMu.Lock()
	defer n.leaderMu.Unlock()
	return n.electedAt
}
