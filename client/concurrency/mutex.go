package concurrency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/client"
)

// Errors of Mutex, with etcd's texts.
var (
	// ErrLocked is returned by TryLock when another session holds the lock.
	ErrLocked = errors.New("mutex: Locked by another session")
	// ErrSessionExpired is returned by Lock when the session's key vanished
	// while waiting: the lease ended, so the lock is not held.
	ErrSessionExpired = errors.New("mutex: session is expired")
	// ErrLockReleased is returned by Unlock when the mutex is not held.
	ErrLockReleased = errors.New("mutex: lock has already been released")
)

// releasedKey is the key a mutex reports once it has left the line.
const releasedKey = "\x00"

// released is the ticket of a mutex that is not in line.
var released = ticket{key: releasedKey, created: -1}

// Mutex is a lock shared through the store. Waiters line up by the create
// revision of their key <name>/<lease hex> (see ticket); the oldest key
// holds the lock, and each waiter watches only the key right ahead of it,
// so a release wakes one waiter, not all.
type Mutex struct {
	s      *Session
	prefix string // the lock's name plus "/"
	ticket ticket
	hdr    *pb.ResponseHeader
}

// NewMutex returns the mutex named pfx for session s.
func NewMutex(s *Session, pfx string) *Mutex {
	return &Mutex{s: s, prefix: pfx + "/", ticket: ticket{created: -1}}
}

// TryLock takes the lock if it is free and returns ErrLocked at once
// otherwise, after leaving the line it joined.
func (m *Mutex) TryLock(ctx context.Context) error {
	atFront, hdr, err := m.join(ctx)
	if err != nil {
		return err
	}
	if atFront {
		m.hdr = hdr
		return nil
	}
	if err := m.leave(ctx); err != nil {
		return err
	}
	return ErrLocked
}

// Lock waits until the lock is held or ctx ends. A wait that fails leaves
// the line, so that it does not block the waiters behind.
func (m *Mutex) Lock(ctx context.Context) error {
	atFront, hdr, err := m.join(ctx)
	if err != nil {
		return err
	}
	if !atFront {
		hdr, err = m.waitTurn(ctx)
	}
	if err == nil {
		m.hdr = hdr
	}
	return err
}

// join takes the session's place in line (or finds it kept) and reports
// whether it is at the front, all in one transaction.
func (m *Mutex) join(ctx context.Context) (atFront bool, hdr *pb.ResponseHeader, err error) {
	front := client.OpGet(m.prefix, withFirstCreate()...)
	t, _, resp, err := takeTicket(ctx, m.s, m.prefix, "", front)
	if err != nil {
		return false, nil, err
	}
	m.ticket = t
	oldest := resp.Responses[1].GetResponseRange().Kvs
	return len(oldest) == 0 || oldest[0].CreateRevision == t.created, resp.Header, nil
}

// waitTurn waits for the keys ahead to go, then checks that our own key
// outlived the wait (the session's lease may have ended meanwhile).
func (m *Mutex) waitTurn(ctx context.Context) (*pb.ResponseHeader, error) {
	c := m.s.Client()
	err := m.ticket.waitForFront(ctx, c, m.prefix)
	var own *client.GetResponse
	if err == nil {
		own, err = c.Get(ctx, m.ticket.key)
	}
	if err != nil {
		// Leave the line even though ctx may have ended.
		cctx, cancel := cleanupContext(ctx, c)
		defer cancel()
		m.Unlock(cctx)
		return nil, err
	}
	if len(own.Kvs) == 0 {
		return nil, ErrSessionExpired
	}
	return own.Header, nil
}

// leave deletes the mutex's key from the line.
func (m *Mutex) leave(ctx context.Context) error {
	if _, err := m.s.Client().Delete(ctx, m.ticket.key); err != nil {
		return err
	}
	m.ticket = released
	return nil
}

// Unlock releases the lock (or leaves the line) by deleting the key.
func (m *Mutex) Unlock(ctx context.Context) error {
	t := m.ticket
	if !t.inLine() {
		return ErrLockReleased
	}
	if !strings.HasPrefix(t.key, m.prefix) {
		return fmt.Errorf("invalid key %q, it should have prefix %q", t.key, m.prefix)
	}
	return m.leave(ctx)
}

// IsOwner is a comparison that holds while this mutex holds the lock; put
// it in a Txn's If to write only as the owner.
func (m *Mutex) IsOwner() client.Cmp { return m.ticket.stillHeld() }

// Key is the mutex's key in the store.
func (m *Mutex) Key() string { return m.ticket.key }

// Header is the response header of the request that acquired the lock.
func (m *Mutex) Header() *pb.ResponseHeader { return m.hdr }

// lockerMutex adapts Mutex to sync.Locker, whose methods cannot fail.
type lockerMutex struct{ *Mutex }

func (lm lockerMutex) Lock() {
	if err := lm.Mutex.Lock(lm.s.Client().Ctx()); err != nil {
		panic(err)
	}
}

func (lm lockerMutex) Unlock() {
	if err := lm.Mutex.Unlock(lm.s.Client().Ctx()); err != nil {
		panic(err)
	}
}

// NewLocker returns a sync.Locker on the mutex named pfx; its methods panic
// when the store cannot be reached.
func NewLocker(s *Session, pfx string) sync.Locker {
	return lockerMutex{NewMutex(s, pfx)}
}
