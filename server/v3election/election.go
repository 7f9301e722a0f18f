// Package v3election owns the server side of etcd's Election service
// (v3electionpb.Election): each call translated into the Election recipe of
// client/concurrency, run by a client of the member itself. It holds no
// state: a leadership is its key in the store, identified to the caller by
// a LeaderKey, so any member, and etcd's or cairn's client recipes, see the
// same election.
package v3election

import (
	"context"
	"errors"

	"github.com/cairnkv/cairn/api/v3electionpb"
	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/client/concurrency"
)

// ErrMissingLeaderKey answers a Proclaim or Resign without a leader, with
// etcd's text.
var ErrMissingLeaderKey = errors.New(`"leader" field must be provided`)

// noLease is the lease of the sessions of Leader and Observe, which write
// nothing; etcd uses the same invalid ID.
const noLease = -1

type electionServer struct{ c *client.Client }

// NewElectionServer returns the Election service running its requests
// through c.
func NewElectionServer(c *client.Client) v3electionpb.ElectionServer {
	return &electionServer{c: c}
}

// session borrows the caller's lease: the caller keeps it alive, the
// server never refreshes or revokes it.
func (es *electionServer) session(ctx context.Context, lease int64) (*concurrency.Session, error) {
	s, err := concurrency.NewSession(es.c, concurrency.WithLease(client.LeaseID(lease)), concurrency.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	s.Orphan()
	return s, nil
}

func (es *electionServer) Campaign(ctx context.Context, r *v3electionpb.CampaignRequest) (*v3electionpb.CampaignResponse, error) {
	s, err := es.session(ctx, r.Lease)
	if err != nil {
		return nil, err
	}
	e := concurrency.NewElection(s, string(r.Name))
	if err := e.Campaign(ctx, string(r.Value)); err != nil {
		return nil, err
	}
	return &v3electionpb.CampaignResponse{
		Header: e.Header(),
		Leader: &v3electionpb.LeaderKey{Name: r.Name, Key: []byte(e.Key()), Rev: e.Rev(), Lease: int64(s.Lease())},
	}, nil
}

// resume is the election a LeaderKey names, led by its lease.
func (es *electionServer) resume(ctx context.Context, l *v3electionpb.LeaderKey) (*concurrency.Election, error) {
	if l == nil {
		return nil, ErrMissingLeaderKey
	}
	s, err := es.session(ctx, l.Lease)
	if err != nil {
		return nil, err
	}
	return concurrency.ResumeElection(s, string(l.Name), string(l.Key), l.Rev), nil
}

func (es *electionServer) Proclaim(ctx context.Context, r *v3electionpb.ProclaimRequest) (*v3electionpb.ProclaimResponse, error) {
	e, err := es.resume(ctx, r.Leader)
	if err != nil {
		return nil, err
	}
	if err := e.Proclaim(ctx, string(r.Value)); err != nil {
		return nil, err
	}
	return &v3electionpb.ProclaimResponse{Header: e.Header()}, nil
}

func (es *electionServer) Resign(ctx context.Context, r *v3electionpb.ResignRequest) (*v3electionpb.ResignResponse, error) {
	e, err := es.resume(ctx, r.Leader)
	if err != nil {
		return nil, err
	}
	if err := e.Resign(ctx); err != nil {
		return nil, err
	}
	return &v3electionpb.ResignResponse{Header: e.Header()}, nil
}

func (es *electionServer) Leader(ctx context.Context, r *v3electionpb.LeaderRequest) (*v3electionpb.LeaderResponse, error) {
	s, err := es.session(ctx, noLease)
	if err != nil {
		return nil, err
	}
	resp, err := concurrency.NewElection(s, string(r.Name)).Leader(ctx)
	if err != nil {
		return nil, err
	}
	return &v3electionpb.LeaderResponse{Header: resp.Header, Kv: resp.Kvs[0]}, nil
}

// Observe streams the leader's values until the caller goes away (its
// context's error) or the underlying watch ends (nil, as etcd).
func (es *electionServer) Observe(r *v3electionpb.LeaderRequest, stream v3electionpb.Election_ObserveServer) error {
	ctx := stream.Context()
	s, err := es.session(ctx, noLease)
	if err != nil {
		return err
	}
	for resp := range concurrency.NewElection(s, string(r.Name)).Observe(ctx) {
		if err := stream.Send(&v3electionpb.LeaderResponse{Header: resp.Header, Kv: resp.Kvs[0]}); err != nil {
			return err
		}
	}
	return ctx.Err()
}
