package concurrency

import (
	"context"
	"errors"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/client"
)

// Errors of Election, with etcd's texts.
var (
	// ErrElectionNotLeader is returned by Proclaim when the election does
	// not hold the leadership (any more).
	ErrElectionNotLeader = errors.New("election: not leader")
	// ErrElectionNoLeader is returned by Leader when nobody leads.
	ErrElectionNoLeader = errors.New("election: no leader")
)

// Election is a leader election among sessions. Candidates line up like the
// waiters of a Mutex (see ticket); the front candidate leads, and its key
// holds the value it proclaims.
type Election struct {
	session *Session
	prefix  string // the election's name plus "/"

	lead    ticket   // the key this election campaigns with
	leading *Session // nil while this election does not lead
	hdr     *pb.ResponseHeader
}

// NewElection returns the election named pfx for session s.
func NewElection(s *Session, pfx string) *Election {
	return &Election{session: s, prefix: pfx + "/"}
}

// ResumeElection returns the election named pfx as led by s with the key
// leaderKey created at leaderRev, as a Campaign answered before (for
// example in another process, holding the same lease).
func ResumeElection(s *Session, pfx, leaderKey string, leaderRev int64) *Election {
	return &Election{session: s, prefix: pfx + "/",
		lead: ticket{key: leaderKey, created: leaderRev}, leading: s}
}

// Campaign enters the election with val and waits until it leads or ctx
// ends. A session that already campaigns keeps its place in line and
// proclaims val if its value differs. When ctx ends, the candidacy is
// withdrawn.
func (e *Election) Campaign(ctx context.Context, val string) error {
	t, held, resp, err := takeTicket(ctx, e.session, e.prefix, val)
	if err != nil {
		return err
	}
	e.lead, e.leading = t, e.session
	if held != nil && string(held.Value) != val {
		if err := e.Proclaim(ctx, val); err != nil {
			e.Resign(ctx)
			return err
		}
	}
	if err := t.waitForFront(ctx, e.session.Client(), e.prefix); err != nil {
		e.giveUp(ctx)
		return err
	}
	e.hdr = resp.Header
	return nil
}

// giveUp ends a campaign whose wait failed: a caller that gave up withdraws
// the candidacy; after a store error the key stays, but this election no
// longer claims to lead.
func (e *Election) giveUp(ctx context.Context) {
	if ctx.Err() == nil {
		e.leading = nil
		return
	}
	cctx, cancel := cleanupContext(ctx, e.session.Client())
	defer cancel()
	e.Resign(cctx)
}

// Proclaim replaces the leader's value, if this election still leads.
func (e *Election) Proclaim(ctx context.Context, val string) error {
	if e.leading == nil {
		return ErrElectionNotLeader
	}
	resp, err := e.session.Client().Txn(ctx).
		If(e.lead.stillHeld()).
		Then(client.OpPut(e.lead.key, val, client.WithLease(e.leading.Lease()))).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		e.lead.key = ""
		return ErrElectionNotLeader
	}
	e.hdr = resp.Header
	return nil
}

// Resign gives the leadership (or the place in line) up, so that the next
// candidate leads. Resigning without leading does nothing.
func (e *Election) Resign(ctx context.Context) error {
	if e.leading == nil {
		return nil
	}
	resp, err := e.session.Client().Txn(ctx).
		If(e.lead.stillHeld()).
		Then(client.OpDelete(e.lead.key)).
		Commit()
	if err == nil {
		e.hdr = resp.Header
	}
	e.lead.key, e.leading = "", nil
	return err
}

// Leader reads the current leader's key and value; ErrElectionNoLeader when
// nobody campaigns.
func (e *Election) Leader(ctx context.Context) (*client.GetResponse, error) {
	resp, err := e.session.Client().Get(ctx, e.prefix, withFirstCreate()...)
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		return nil, ErrElectionNoLeader
	}
	return resp, nil
}

// Key is the leader key while this election leads, "" otherwise.
func (e *Election) Key() string { return e.lead.key }

// Rev is the leader key's create revision while this election leads.
func (e *Election) Rev() int64 { return e.lead.created }

// Header is the response header of the last successful Campaign, Proclaim
// or Resign.
func (e *Election) Header() *pb.ResponseHeader { return e.hdr }

// Observe delivers the leader's key and value each time it changes: the
// current leader first, then every proclamation, then the next leader, and
// so on. Values proclaimed while nobody reads may be skipped, but the
// latest always arrives. The channel closes when ctx ends or a watch fails.
func (e *Election) Observe(ctx context.Context) <-chan *client.GetResponse {
	ch := make(chan *client.GetResponse)
	go e.observe(ctx, ch)
	return ch
}

func (e *Election) observe(ctx context.Context, ch chan<- *client.GetResponse) {
	defer close(ch)
	for {
		hdr, kv, ok := e.nextLeader(ctx)
		if !ok || !send(ctx, ch, hdr, kv) {
			return
		}
		if !e.followLeader(ctx, ch, string(kv.Key), hdr.Revision+1) {
			return
		}
	}
}

// nextLeader returns the current leader, waiting for one if nobody leads.
func (e *Election) nextLeader(ctx context.Context) (*pb.ResponseHeader, *mvccpb.KeyValue, bool) {
	c := e.session.Client()
	resp, err := c.Get(ctx, e.prefix, withFirstCreate()...)
	if err != nil {
		return nil, nil, false
	}
	if len(resp.Kvs) > 0 {
		return resp.Header, resp.Kvs[0], true
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := c.Watch(wctx, e.prefix, client.WithPrefix(), client.WithRev(resp.Header.Revision))
	for wr := range wch {
		if wr.Err() != nil {
			return nil, nil, false
		}
		// The first put is the new leader; deletes (of candidates that
		// came and went) do not matter.
		for _, ev := range wr.Events {
			if ev.Type == client.EventTypePut {
				// A batch may hold several revisions: report the put's.
				hdr := &pb.ResponseHeader{ClusterId: wr.Header.GetClusterId(), MemberId: wr.Header.GetMemberId(),
					Revision: ev.Kv.ModRevision, RaftTerm: wr.Header.GetRaftTerm()}
				return hdr, ev.Kv, true
			}
		}
	}
	return nil, nil, false
}

// followLeader delivers the leader key's new values from rev until the key
// is deleted (true) or ctx ends or the watch fails (false).
func (e *Election) followLeader(ctx context.Context, ch chan<- *client.GetResponse, key string, rev int64) bool {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range e.session.Client().Watch(wctx, key, client.WithRev(rev)) {
		for _, ev := range wr.Events {
			if ev.Type == client.EventTypeDelete {
				return true
			}
			if !send(ctx, ch, wr.Header, ev.Kv) {
				return false
			}
		}
	}
	return false
}

func send(ctx context.Context, ch chan<- *client.GetResponse, hdr *pb.ResponseHeader, kv *mvccpb.KeyValue) bool {
	select {
	case ch <- &client.GetResponse{Header: hdr, Kvs: []*mvccpb.KeyValue{kv}}:
		return true
	case <-ctx.Done():
		return false
	}
}
