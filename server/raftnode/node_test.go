package raftnode

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memPersister records what was persisted, in order.
type memPersister struct {
	mu      sync.Mutex
	entries []*raftpb.Entry
	states  []*raftpb.HardState
}

func (p *memPersister) Save(st *raftpb.HardState, ents []*raftpb.Entry) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.entries = append(p.entries, ents...)
	if !raft.IsEmptyHardState(st) {
		p.states = append(p.states, st)
	}
	return nil
}

func (p *memPersister) SaveSnap(*raftpb.Snapshot) error { return nil }
func (p *memPersister) Sync() error                     { return nil }

func (p *memPersister) lastIndex() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.entries) == 0 {
		return 0
	}
	return p.entries[len(p.entries)-1].GetIndex()
}

func newTestNode(t *testing.T, voters ...uint64) (*Node, *memPersister) {
	t.Helper()
	ms := raft.NewMemoryStorage()
	rn, err := raft.NewRawNode(&raft.Config{
		ID: 1, ElectionTick: 10, HeartbeatTick: 1, Storage: ms,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, Logger: &raft.DefaultLogger{Logger: nopStdLogger()},
	})
	if err != nil {
		t.Fatal(err)
	}
	peers := make([]raft.Peer, len(voters))
	for i, v := range voters {
		peers[i] = raft.Peer{ID: v}
	}
	if err := rn.Bootstrap(peers); err != nil {
		t.Fatal(err)
	}
	p := &memPersister{}
	n := New(Config{ID: 1, Logger: zap.NewNop(), RawNode: rn, MemStorage: ms, Persister: p, TickInterval: time.Millisecond})
	n.Start()
	t.Cleanup(n.Stop)
	return n, p
}

// applyAll drains the apply channel, checking the persistence contract, and
// returns the data of the normal entries it saw, in order.
func applyAll(t *testing.T, n *Node, p *memPersister, want int) []string {
	t.Helper()
	var got []string
	deadline := time.After(10 * time.Second)
	for len(got) < want {
		select {
		case batch := <-n.Apply():
			last := batch.Entries[len(batch.Entries)-1].GetIndex()
			if last > n.LastPersisted() {
				<-batch.Persisted
			}
			if last > p.lastIndex() {
				t.Fatalf("entry %d would be applied before it is in the WAL (persisted up to %d)", last, p.lastIndex())
			}
			for _, e := range batch.Entries {
				if e.GetType() == raftpb.EntryNormal && len(e.GetData()) > 0 {
					got = append(got, string(e.GetData()))
				}
				if e.GetType() == raftpb.EntryConfChange {
					cc := &raftpb.ConfChange{}
					if err := proto.Unmarshal(e.GetData(), cc); err == nil {
						if _, err := n.ApplyConfChange(cc); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		case <-deadline:
			t.Fatalf("gave up waiting: applied %d of %d", len(got), want)
		}
	}
	return got
}

func TestSingleMemberAppliesProposalsInOrderAfterPersisting(t *testing.T) {
	n, p := newTestNode(t, 1)
	waitLeader(t, n)
	const total = 200
	var dropped sync.WaitGroup
	for i := 0; i < total; i++ {
		dropped.Add(1)
		i := i
		go func() {
			defer dropped.Done()
			n.Propose(context.Background(), time.Time{}, []byte(fmt.Sprintf("%03d", i)), func(err error) { t.Errorf("proposal %d dropped: %v", i, err) })
		}()
	}
	dropped.Wait()
	got := applyAll(t, n, p, total)
	seen := map[string]bool{}
	for _, d := range got {
		if seen[d] {
			t.Fatalf("entry %s applied twice", d)
		}
		seen[d] = true
	}
	if len(seen) != total {
		t.Fatalf("applied %d distinct entries, want %d", len(seen), total)
	}
	if n.Leader() != 1 || n.Term() == 0 || n.Committed() < total {
		t.Fatalf("leader=%d term=%d committed=%d", n.Leader(), n.Term(), n.Committed())
	}
}

// waitLeader campaigns and waits until this member leads (the vote for
// itself counts only once persisted, so leadership follows a Ready).
func waitLeader(t *testing.T, n *Node) {
	t.Helper()
	changed := n.LeaderChanged()
	if err := n.Campaign(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no leader")
	}
	if n.Leader() != 1 {
		t.Fatalf("leader = %d", n.Leader())
	}
}

func TestProposalWithoutLeaderWaitsForItsCaller(t *testing.T) {
	// Three voters and no transport: no election can be won. The proposal is
	// held (as raft.Node holds it) until its caller gives up.
	n, _ := newTestNode(t, 1, 2, 3)
	errc := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	n.Propose(ctx, time.Time{}, []byte("x"), func(err error) { errc <- err })
	select {
	case err := <-errc:
		t.Fatalf("proposal dropped while its caller still waits: %v", err)
	case <-time.After(50 * time.Millisecond): // a window to see a wrong early drop; passing never depends on it
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("proposal neither applied nor dropped")
	}
}

func TestProposalWithoutLeaderDroppedAtItsDeadline(t *testing.T) {
	// No election can be won; the proposal's deadline has passed already,
	// so it is dropped at the next look at the queue while its ctx lives on.
	n, _ := newTestNode(t, 1, 2, 3)
	errc := make(chan error, 1)
	n.Propose(context.Background(), time.Now(), []byte("x"), func(err error) { errc <- err })
	select {
	case err := <-errc:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("proposal past its deadline neither applied nor dropped")
	}
}

func TestOperationsAfterStopFail(t *testing.T) {
	n, _ := newTestNode(t, 1)
	n.Stop()
	if _, err := n.Status(); !errors.Is(err, ErrStopped) {
		t.Fatalf("Status after Stop: %v", err)
	}
	errc := make(chan error, 1)
	n.Propose(context.Background(), time.Time{}, []byte("late"), func(err error) { errc <- err })
	n.Stop() // idempotent; drops what was queued meanwhile
	if err := <-errc; !errors.Is(err, ErrStopped) {
		t.Fatalf("queued proposal after Stop: %v", err)
	}
}

func TestLeaderChangeIsAnnounced(t *testing.T) {
	n, _ := newTestNode(t, 1)
	waitLeader(t, n)
	st, err := n.Status()
	if err != nil {
		t.Fatal(err)
	}
	if st.Lead != 1 || st.RaftState != raft.StateLeader {
		t.Fatalf("status: lead=%d state=%v", st.Lead, st.RaftState)
	}
}
