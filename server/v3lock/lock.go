// Package v3lock owns the server side of etcd's Lock service
// (v3lockpb.Lock): Lock and Unlock calls translated into the Mutex recipe
// of client/concurrency, run by a client of the member itself. It holds no
// state: the lock is its key in the store, so any member, and etcd's or
// cairn's client recipes, see the same lock.
package v3lock

import (
	"context"

	"github.com/cairnkv/cairn/api/v3lockpb"
	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/client/concurrency"
)

type lockServer struct{ c *client.Client }

// NewLockServer returns the Lock service running its requests through c.
func NewLockServer(c *client.Client) v3lockpb.LockServer { return &lockServer{c: c} }

// Lock waits for the lock on the caller's lease. The lease stays the
// caller's to keep alive: the session only borrows it, so the server never
// refreshes or revokes it.
func (ls *lockServer) Lock(ctx context.Context, r *v3lockpb.LockRequest) (*v3lockpb.LockResponse, error) {
	s, err := concurrency.NewSession(ls.c, concurrency.WithLease(client.LeaseID(r.Lease)), concurrency.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	s.Orphan()
	m := concurrency.NewMutex(s, string(r.Name))
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	return &v3lockpb.LockResponse{Header: m.Header(), Key: []byte(m.Key())}, nil
}

// Unlock deletes the ownership key, whoever's it is, as etcd does.
func (ls *lockServer) Unlock(ctx context.Context, r *v3lockpb.UnlockRequest) (*v3lockpb.UnlockResponse, error) {
	resp, err := ls.c.Delete(ctx, string(r.Key))
	if err != nil {
		return nil, err
	}
	return &v3lockpb.UnlockResponse{Header: resp.Header}, nil
}
