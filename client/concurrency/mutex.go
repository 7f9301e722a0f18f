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

// releasedKey marks a mutex that has given its key up.
const releasedKey = "\x00"

// Mutex is a lock shared through the store. Waiters queue by the create
// revision of their key pfx/<lease hex>; the oldest key holds the lock, and
// each waiter waits only for the key right ahead of it, so a release wakes
// one waiter, not all.
type Mutex struct {
	s   *Session
	pfx string // the lock's name plus "/"

	myKey string
	myRev int64 // create revision of myKey; -1 when not queued
	hdr   *pb.ResponseHeader
}

// NewMutex returns the mutex named pfx for session s.
func NewMutex(s *Session, pfx string) *Mutex {
	return &Mutex{s: s, pfx: pfx + "/", myRev: -1}
}

// TryLock takes the lock if it is free and returns ErrLocked at once
// otherwise, after removing the key it queued.
func (m *Mutex) TryLock(ctx context.Context) error {
	resp, err := m.enqueue(ctx)
	if err != nil {
		return err
	}
	if m.owns(resp) {
		m.hdr = resp.Header
		return nil
	}
	if _, err := m.s.Client().Delete(ctx, m.myKey); err != nil {
		return err
	}
	m.myKey, m.myRev = releasedKey, -1
	return ErrLocked
}

// Lock waits until the lock is held or ctx ends. A wait that fails removes
// the queued key, so it does not block the waiters behind it.
func (m *Mutex) Lock(ctx context.Context) error {
	resp, err := m.enqueue(ctx)
	if err != nil {
		return err
	}
	if m.owns(resp) {
		m.hdr = resp.Header
		return nil
	}
	c := m.s.Client()
	err = waitDeletes(ctx, c, m.pfx, m.myRev-1)
	var gresp *client.GetResponse
	if err == nil {
		// The keys ahead are gone; the lock is ours only if our key
		// survived the wait (the session's lease may have ended meanwhile).
		gresp, err = c.Get(ctx, m.myKey)
	}
	if err != nil {
		// Leave the queue, even though ctx may have ended.
		cctx, cancel := cleanupContext(ctx, c)
		defer cancel()
		m.Unlock(cctx)
		return err
	}
	if len(gresp.Kvs) == 0 {
		return ErrSessionExpired
	}
	m.hdr = gresp.Header
	return nil
}

// enqueue creates the session's key under the prefix unless it exists (the
// session may hold or wait for the lock already) and reads the current
// owner, in one transaction.
func (m *Mutex) enqueue(ctx context.Context) (*client.TxnResponse, error) {
	lease := m.s.Lease()
	m.myKey = fmt.Sprintf("%s%x", m.pfx, lease)
	owner := client.OpGet(m.pfx, withFirstCreate()...)
	resp, err := m.s.Client().Txn(ctx).
		If(client.Compare(client.CreateRevision(m.myKey), "=", 0)).
		Then(client.OpPut(m.myKey, "", client.WithLease(lease)), owner).
		Else(client.OpGet(m.myKey), owner).
		Commit()
	if err != nil {
		return nil, err
	}
	m.myRev = resp.Header.Revision
	if !resp.Succeeded {
		m.myRev = resp.Responses[0].GetResponseRange().Kvs[0].CreateRevision
	}
	return resp, nil
}

// owns reports whether enqueue's transaction found our key to be the oldest.
func (m *Mutex) owns(resp *client.TxnResponse) bool {
	kvs := resp.Responses[1].GetResponseRange().Kvs
	return len(kvs) == 0 || kvs[0].CreateRevision == m.myRev
}

// Unlock releases the lock (or leaves the queue) by deleting the key.
func (m *Mutex) Unlock(ctx context.Context) error {
	if m.myKey == "" || m.myKey == releasedKey || m.myRev <= 0 {
		return ErrLockReleased
	}
	if !strings.HasPrefix(m.myKey, m.pfx) {
		return fmt.Errorf("invalid key %q, it should have prefix %q", m.myKey, m.pfx)
	}
	if _, err := m.s.Client().Delete(ctx, m.myKey); err != nil {
		return err
	}
	m.myKey, m.myRev = releasedKey, -1
	return nil
}

// IsOwner is a comparison that holds while this mutex holds the lock; put
// it in a Txn's If to write only as the owner.
func (m *Mutex) IsOwner() client.Cmp {
	return client.Compare(client.CreateRevision(m.myKey), "=", m.myRev)
}

// Key is the mutex's key in the store.
func (m *Mutex) Key() string { return m.myKey }

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
