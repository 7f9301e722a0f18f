package lease

import (
	"math"
	"slices"
	"sync"
	"time"
)

// LeaseID identifies a lease; NoLease (0) means "no lease".
type LeaseID int64

// NoLease is the lease ID of a key without a lease.
const NoLease LeaseID = 0

// Lease is one granted lease. Its ID and TTL never change; its checkpointed
// remaining TTL, expiry and attached keys do, under the lease's own lock.
type Lease struct {
	id      LeaseID
	ttl     int64 // granted TTL in seconds, already clamped to the minimum
	clock   Clock
	revokec chan struct{} // closed once the lease is revoked

	mu           sync.RWMutex
	remainingTTL int64     // last checkpointed remaining TTL in seconds; 0 if none
	expiry       time.Time // zero: never expires (the lessor is not primary)
	keys         map[string]struct{}
}

func newLease(id LeaseID, ttl, remainingTTL int64, clock Clock) *Lease {
	return &Lease{
		id:           id,
		ttl:          ttl,
		clock:        clock,
		revokec:      make(chan struct{}),
		remainingTTL: remainingTTL,
		keys:         make(map[string]struct{}),
	}
}

// ID is the lease's ID.
func (l *Lease) ID() LeaseID { return l.id }

// TTL is the granted TTL in seconds (after clamping to the minimum). A
// keepalive answers it.
func (l *Lease) TTL() int64 { return l.ttl }

// CheckpointedTTL is the remaining TTL of the last applied checkpoint, 0 if
// none (or if a renewal cleared it).
func (l *Lease) CheckpointedTTL() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.remainingTTL
}

// Remaining is the time until the lease expires; math.MaxInt64 if it does
// not expire here (the lessor is not primary). It is negative for a lease
// that expired and is waiting to be revoked.
func (l *Lease) Remaining() time.Duration {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.expiry.IsZero() {
		return time.Duration(math.MaxInt64)
	}
	return l.expiry.Sub(l.clock.Now())
}

// RemainingTTL is what TimeToLive reports, in seconds: on the primary the
// whole seconds until expiry (never below 0); elsewhere the checkpointed
// remaining TTL if there is one, else the granted TTL.
func (l *Lease) RemainingTTL() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.expiry.IsZero() {
		return l.baseTTL()
	}
	return max(int64(l.expiry.Sub(l.clock.Now())/time.Second), 0)
}

// Expiry is when the lease expires; the zero time if it does not expire here.
func (l *Lease) Expiry() time.Time {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.expiry
}

// Keys returns the attached keys, sorted.
func (l *Lease) Keys() []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	keys := make([]string, 0, len(l.keys))
	for k := range l.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Revoked is closed once the lease has been revoked.
func (l *Lease) Revoked() <-chan struct{} { return l.revokec }

// baseTTL is the TTL a refresh counts from: the checkpointed remaining TTL
// if set, else the granted TTL. Callers hold l.mu.
func (l *Lease) baseTTL() int64 {
	if l.remainingTTL > 0 {
		return l.remainingTTL
	}
	return l.ttl
}

// countdownTTL is baseTTL under the lease's lock.
func (l *Lease) countdownTTL() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.baseTTL()
}

// refresh sets the expiry to now + extend + baseTTL and returns it.
func (l *Lease) refresh(now time.Time, extend time.Duration) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expiry = now.Add(extend + time.Duration(l.baseTTL())*time.Second)
	return l.expiry
}

// setExpiry sets the expiry to t (zero: never).
func (l *Lease) setExpiry(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expiry = t
}

// expired tells whether the lease has a finite expiry at or before now.
func (l *Lease) expired(now time.Time) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return !l.expiry.IsZero() && !now.Before(l.expiry)
}

func (l *Lease) setRemainingTTL(ttl int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.remainingTTL = ttl
}

func (l *Lease) addKey(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys[key] = struct{}{}
}

func (l *Lease) removeKey(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.keys, key)
}
