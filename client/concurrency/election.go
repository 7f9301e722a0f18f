package concurrency

import (
	"context"
	"errors"
	"fmt"

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

// Election is a leader election among sessions. Candidates queue like the
// waiters of a Mutex; the leader's key holds its proclaimed value.
type Election struct {
	session *Session
	pfx     string // the election's name plus "/"

	leaderKey     string
	leaderRev     int64
	leaderSession *Session // nil while this election does not lead
	hdr           *pb.ResponseHeader
}

// NewElection returns the election named pfx for session s.
func NewElection(s *Session, pfx string) *Election {
	return &Election{session: s, pfx: pfx + "/"}
}

// ResumeElection returns the election named pfx as led by s with the key
// leaderKey created at leaderRev, as a Campaign answered before (for
// example in another process, holding the same lease).
func ResumeElection(s *Session, pfx, leaderKey string, leaderRev int64) *Election {
	return &Election{session: s, pfx: pfx + "/",
		leaderKey: leaderKey, leaderRev: leaderRev, leaderSession: s}
}

// Campaign enters the election with val and waits until it leads or ctx
// ends. A session that already campaigns keeps its place in the queue and
// proclaims val if its value differs. When ctx ends, the candidacy is
// withdrawn.
func (e *Election) Campaign(ctx context.Context, val string) error {
	s := e.session
	c := s.Client()
	key := fmt.Sprintf("%s%x", e.pfx, s.Lease())
	resp, err := c.Txn(ctx).
		If(client.Compare(client.CreateRevision(key), "=", 0)).
		Then(client.OpPut(key, val, client.WithLease(s.Lease()))).
		Else(client.OpGet(key)).
		Commit()
	if err != nil {
		return err
	}
	e.leaderKey, e.leaderRev, e.leaderSession = key, resp.Header.Revision, s
	if !resp.Succeeded {
		kv := resp.Responses[0].GetResponseRange().Kvs[0]
		e.leaderRev = kv.CreateRevision
		if string(kv.Value) != val {
			if err := e.Proclaim(ctx, val); err != nil {
				e.Resign(ctx)
				return err
			}
		}
	}
	if err := waitDeletes(ctx, c, e.pfx, e.leaderRev-1); err != nil {
		if ctx.Err() != nil {
			// The caller gave up: leave the queue.
			cctx, cancel := cleanupContext(ctx, c)
			defer cancel()
			e.Resign(cctx)
		} else {
			e.leaderSession = nil
		}
		return err
	}
	e.hdr = resp.Header
	return nil
}

// Proclaim replaces the leader's value, if this election still leads.
func (e *Election) Proclaim(ctx context.Context, val string) error {
	if e.leaderSession == nil {
		return ErrElectionNotLeader
	}
	resp, err := e.session.Client().Txn(ctx).
		If(e.stillLeads()).
		Then(client.OpPut(e.leaderKey, val, client.WithLease(e.leaderSession.Lease()))).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		e.leaderKey = ""
		return ErrElectionNotLeader
	}
	e.hdr = resp.Header
	return nil
}

// Resign gives the leadership (or the place in the queue) up, so that the
// next candidate leads. Resigning without leading does nothing.
func (e *Election) Resign(ctx context.Context) error {
	if e.leaderSession == nil {
		return nil
	}
	resp, err := e.session.Client().Txn(ctx).
		If(e.stillLeads()).
		Then(client.OpDelete(e.leaderKey)).
		Commit()
	if err == nil {
		e.hdr = resp.Header
	}
	e.leaderKey, e.leaderSession = "", nil
	return err
}

// stillLeads holds while the leader key is the one this election created.
func (e *Election) stillLeads() client.Cmp {
	return client.Compare(client.CreateRevision(e.leaderKey), "=", e.leaderRev)
}

// Leader reads the current leader's key and value; ErrElectionNoLeader when
// nobody campaigns.
func (e *Election) Leader(ctx context.Context) (*client.GetResponse, error) {
	resp, err := e.session.Client().Get(ctx, e.pfx, withFirstCreate()...)
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		return nil, ErrElectionNoLeader
	}
	return resp, nil
}

// Key is the leader key while this election leads, "" otherwise.
func (e *Election) Key() string { return e.leaderKey }

// Rev is the leader key's create revision while this election leads.
func (e *Election) Rev() int64 { return e.leaderRev }

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
	resp, err := c.Get(ctx, e.pfx, withFirstCreate()...)
	if err != nil {
		return nil, nil, false
	}
	if len(resp.Kvs) > 0 {
		return resp.Header, resp.Kvs[0], true
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := c.Watch(wctx, e.pfx, client.WithPrefix(), client.WithRev(resp.Header.Revision))
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
