package lease

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/defaults"
	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/metrics"
	"github.com/cairnkv/cairn/server/storage/backend"
)

const (
	// MaxLeaseTTL is the largest TTL Grant accepts, in seconds (etcd's).
	MaxLeaseTTL = 9000000000
	// DefaultMinLeaseTTL is MinTTL for etcd's default timing (100 ms
	// heartbeat, 10 election ticks).
	DefaultMinLeaseTTL = 2
	// DefaultCheckpointInterval is etcd's default checkpoint interval.
	DefaultCheckpointInterval = 5 * time.Minute
	// DefaultExpiredLeasesRetryInterval is the lessor's own default; etcd's
	// server passes its request timeout instead (see Config).
	DefaultExpiredLeasesRetryInterval = 3 * tickInterval

	// tickInterval is how often the primary looks for expired leases and due
	// checkpoints.
	tickInterval = 500 * time.Millisecond
	// leaseRevokeRate is how many expired leases per second the primary
	// reports at most; leaseCheckpointRate the same for checkpoints.
	leaseRevokeRate     = 1000
	leaseCheckpointRate = 1000
	// expiredBacklog is how many unread batches ExpiredLeasesC buffers.
	expiredBacklog = 16
)

// ErrNotPrimary: Renew on a lessor that is not the primary (the member is
// not the leader, or lost leadership while the renewal waited).
var ErrNotPrimary = errors.New("not a primary lessor")

// MinTTL is etcd's minimum lease TTL in seconds for a member's raft timing:
// one and a half election timeouts (counted in whole ticks, the half
// rounded down), rounded up to whole seconds.
func MinTTL(electionTicks int, heartbeat time.Duration) int64 {
	d := time.Duration(3*electionTicks/2) * heartbeat
	return int64(math.Ceil(d.Seconds()))
}

// TxnDeleter is the write transaction Revoke deletes a lease's keys in;
// mvcc.TxnWrite implements it. It must hold the backend's batch lock from
// its creation until End, as mvcc.Store.Write does: Revoke removes the
// lease record through the same batch, unlocked, so keys and record go
// together.
type TxnDeleter interface {
	DeleteRange(key, end []byte) (n, rev int64)
	End()
}

// Checkpointer proposes remaining-TTL checkpoints through raft and returns
// once they are applied (or failed); the member wraps the batch in a
// LeaseCheckpointRequest.
type Checkpointer func(ctx context.Context, cps []*pb.LeaseCheckpoint) error

// Config configures a Lessor. Only Backend is required.
type Config struct {
	// Backend holds the lease bucket.
	Backend backend.Backend
	// NewTxn opens the transaction Revoke deletes attached keys in
	// (typically func() TxnDeleter { return store.Write() }). When nil,
	// Revoke removes only the lease record.
	NewTxn func() TxnDeleter
	// MinLeaseTTL is the smallest TTL in seconds (see MinTTL); a smaller
	// granted TTL is raised to it. <= 0 means DefaultMinLeaseTTL.
	MinLeaseTTL int64
	// Checkpointer is called with due checkpoints on the primary; nil
	// disables checkpointing (etcd's LeaseCheckpoint feature gate, off by
	// default). Applied checkpoints (Checkpoint) are honoured either way.
	Checkpointer Checkpointer
	// CheckpointInterval is how long after a grant, promotion or checkpoint
	// the primary checkpoints a lease again; <= 0 means 5 minutes.
	CheckpointInterval time.Duration
	// ExpiredLeasesRetryInterval is how long the primary waits for an
	// expired lease it reported to be revoked before reporting it again;
	// <= 0 means DefaultExpiredLeasesRetryInterval. etcd's member passes
	// its request timeout (5 s + 2 election timeouts).
	ExpiredLeasesRetryInterval time.Duration
	// Clock defaults to RealClock.
	Clock Clock
	// Logger defaults to a no-op logger.
	Logger *zap.Logger
}

// Lessor owns the leases of one member; see the package documentation.
type Lessor struct {
	lg                 *zap.Logger
	clock              Clock
	minTTL             int64
	cp                 Checkpointer
	checkpointInterval time.Duration
	retryInterval      time.Duration
	revokeLimit        int // expired leases reported per tick
	checkpointLimit    int // checkpoints proposed per tick

	mu          sync.RWMutex
	be          backend.Backend
	newTxn      func() TxnDeleter
	leases      map[LeaseID]*Lease
	items       map[string]LeaseID // attached key -> lease
	demotec     chan struct{}      // non-nil while primary; closed by Demote
	expiries    *timeQueue         // primary only
	checkpoints *timeQueue         // primary only

	expiredC chan []*Lease
	ctx      context.Context // cancelled by Stop; passed to Checkpointer
	cancel   context.CancelFunc
	donec    chan struct{} // closed when run returns
	started  bool          // run was started
	stopOnce sync.Once
}

// NewLessor loads the leases of cfg.Backend's lease bucket (not primary, no
// keys attached: see RecoverAttachments) and starts the primary's
// background loop. Stop it with Stop.
func NewLessor(cfg Config) (*Lessor, error) {
	le, err := newLessor(cfg)
	if err != nil {
		return nil, err
	}
	le.started = true
	go le.run()
	return le, nil
}

// newLessor builds a Lessor without starting its loop.
func newLessor(cfg Config) (*Lessor, error) {
	if cfg.Backend == nil {
		return nil, errors.New("lease: Config.Backend is required")
	}
	le := &Lessor{
		lg:                 cfg.Logger,
		clock:              cfg.Clock,
		minTTL:             cfg.MinLeaseTTL,
		cp:                 cfg.Checkpointer,
		checkpointInterval: cfg.CheckpointInterval,
		retryInterval:      cfg.ExpiredLeasesRetryInterval,
		revokeLimit:        leaseRevokeRate / 2,
		checkpointLimit:    leaseCheckpointRate / 2,
		expiries:           newTimeQueue(),
		expiredC:           make(chan []*Lease, expiredBacklog),
		donec:              make(chan struct{}),
	}
	le.applyDefaults()
	le.ctx, le.cancel = context.WithCancel(context.Background())
	if err := le.load(cfg.Backend, cfg.NewTxn); err != nil {
		le.cancel()
		return nil, err
	}
	return le, nil
}

func (le *Lessor) applyDefaults() {
	if le.lg == nil {
		le.lg = zap.NewNop()
	}
	if le.clock == nil {
		le.clock = RealClock{}
	}
	le.minTTL = defaults.Positive(le.minTTL, DefaultMinLeaseTTL)
	le.checkpointInterval = defaults.Positive(le.checkpointInterval, DefaultCheckpointInterval)
	le.retryInterval = defaults.Positive(le.retryInterval, DefaultExpiredLeasesRetryInterval)
}

// MinLeaseTTL is the minimum TTL in seconds.
func (le *Lessor) MinLeaseTTL() int64 { return le.minTTL }

// Grant creates lease id with ttl seconds (raised to the minimum) and
// stores it in the backend's batch. Apply step only.
// Errors: errs.ErrLeaseNotFound for id 0 (the member picks an ID before
// proposing), errs.ErrLeaseTTLTooLarge above MaxLeaseTTL,
// errs.ErrLeaseExists for an ID in use.
func (le *Lessor) Grant(id LeaseID, ttl int64) (*Lease, error) {
	if id == NoLease {
		return nil, errs.ErrLeaseNotFound
	}
	if ttl > MaxLeaseTTL {
		return nil, errs.ErrLeaseTTLTooLarge
	}
	tx := le.batch()
	tx.Lock()
	defer tx.Unlock()
	l, err := le.addLease(id, max(ttl, le.minTTL))
	if err != nil {
		return nil, err
	}
	putLease(tx, l)
	metrics.LeaseGranted.Inc()
	metrics.LeaseTTL.Observe(float64(l.ttl))
	return l, nil
}

// addLease registers a new lease; on the primary it starts counting down.
func (le *Lessor) addLease(id LeaseID, ttl int64) (*Lease, error) {
	le.mu.Lock()
	defer le.mu.Unlock()
	if _, ok := le.leases[id]; ok {
		return nil, errs.ErrLeaseExists
	}
	l := newLease(id, ttl, 0, le.clock)
	le.leases[id] = l
	if le.isPrimary() {
		now := le.clock.Now()
		le.expiries.set(id, l.refresh(now, 0))
		le.scheduleCheckpoint(l, now)
	}
	return l, nil
}

// Revoke deletes every key attached to lease id, in key order, in one
// write transaction (one revision), removes the lease record in the same
// batch and closes the lease's Revoked channel. Apply step only.
// errs.ErrLeaseNotFound if the lease does not exist.
func (le *Lessor) Revoke(id LeaseID) error {
	le.mu.RLock()
	_, ok := le.leases[id]
	be, newTxn := le.be, le.newTxn
	le.mu.RUnlock()
	if !ok {
		return errs.ErrLeaseNotFound
	}
	txn := openTxn(be, newTxn)
	l := le.removeLease(id)
	if l == nil { // revoked concurrently
		txn.End()
		return errs.ErrLeaseNotFound
	}
	for _, key := range l.Keys() {
		txn.DeleteRange([]byte(key), nil)
	}
	deleteLease(be.BatchTx(), id)
	txn.End()
	close(l.revokec)
	metrics.LeaseRevoked.Inc()
	return nil
}

// removeLease drops lease id and its attachments; nil if it is unknown.
func (le *Lessor) removeLease(id LeaseID) *Lease {
	le.mu.Lock()
	defer le.mu.Unlock()
	l := le.leases[id]
	if l == nil {
		return nil
	}
	delete(le.leases, id)
	for _, key := range l.Keys() {
		if le.items[key] == id {
			delete(le.items, key)
		}
	}
	le.expiries.remove(id)
	le.checkpoints.remove(id)
	return l
}

// Checkpoint records remainingTTL (0 clears it) as lease id's remaining
// TTL, in memory and in the backend's batch; the next promotion counts
// from it. It does not move the expiry of a lease on the primary. An
// unknown lease is ignored (it may have been revoked after the checkpoint
// was proposed). Apply step only.
func (le *Lessor) Checkpoint(id LeaseID, remainingTTL int64) error {
	tx := le.batch()
	tx.Lock()
	defer tx.Unlock()
	le.mu.Lock()
	defer le.mu.Unlock()
	l := le.leases[id]
	if l == nil {
		return nil
	}
	l.setRemainingTTL(remainingTTL)
	putLease(tx, l)
	if le.isPrimary() {
		le.scheduleCheckpoint(l, le.clock.Now())
	}
	return nil
}

// Attach attaches keys to lease id; a key attached to another lease moves.
// Apply step (and RecoverAttachments) only. errs.ErrLeaseNotFound if the
// lease does not exist.
func (le *Lessor) Attach(id LeaseID, keys []string) error {
	return le.withKeysOf(id, func(l *Lease) {
		for _, key := range keys {
			if old, ok := le.items[key]; ok && old != id {
				if ol := le.leases[old]; ol != nil {
					ol.removeKey(key)
				}
			}
			le.items[key] = id
			l.addKey(key)
		}
	})
}

// Detach detaches keys from lease id (a key not attached to it is left
// alone). Apply step only. errs.ErrLeaseNotFound if the lease does not exist.
func (le *Lessor) Detach(id LeaseID, keys []string) error {
	return le.withKeysOf(id, func(l *Lease) {
		for _, key := range keys {
			if le.items[key] == id {
				delete(le.items, key)
			}
			l.removeKey(key)
		}
	})
}

// withKeysOf runs change on lease id under the write lock, for it to move
// keys to or from the lease; errs.ErrLeaseNotFound if there is no such
// lease.
func (le *Lessor) withKeysOf(id LeaseID, change func(l *Lease)) error {
	le.mu.Lock()
	defer le.mu.Unlock()
	l := le.leases[id]
	if l == nil {
		return errs.ErrLeaseNotFound
	}
	change(l)
	return nil
}

// KeyPut records that key was written with lease id (NoLease: none): the
// key moves to id, or is detached when id is NoLease. The apply step calls
// it for every Put it applies. errs.ErrLeaseNotFound if id is unknown (the
// key is then left as it was).
func (le *Lessor) KeyPut(key string, id LeaseID) error {
	if id != NoLease {
		return le.Attach(id, []string{key})
	}
	le.KeyDeleted(key)
	return nil
}

// KeyDeleted detaches key from its lease, if any. The apply step calls it
// for every key a DeleteRange (or a Txn's delete) removes.
func (le *Lessor) KeyDeleted(key string) {
	le.mu.Lock()
	defer le.mu.Unlock()
	id, ok := le.items[key]
	if !ok {
		return
	}
	delete(le.items, key)
	if l := le.leases[id]; l != nil {
		l.removeKey(key)
	}
}

// GetLease returns the lease key is attached to, NoLease if none.
func (le *Lessor) GetLease(key string) LeaseID {
	le.mu.RLock()
	defer le.mu.RUnlock()
	return le.items[key]
}

// Lookup returns lease id, nil if it does not exist.
func (le *Lessor) Lookup(id LeaseID) *Lease {
	le.mu.RLock()
	defer le.mu.RUnlock()
	return le.leases[id]
}

// Exists tells whether lease id exists; it implements apply.LeaseLookup.
func (le *Lessor) Exists(id int64) bool { return le.Lookup(LeaseID(id)) != nil }

// Leases returns every lease, sorted by ID.
func (le *Lessor) Leases() []*Lease {
	le.mu.RLock()
	ls := make([]*Lease, 0, len(le.leases))
	for _, l := range le.leases {
		ls = append(ls, l)
	}
	le.mu.RUnlock()
	slices.SortFunc(ls, func(a, b *Lease) int { return compareIDs(a.id, b.id) })
	return ls
}

func compareIDs(a, b LeaseID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ExpiredLeasesC delivers, on the primary, batches of leases whose expiry
// passed, earliest first. The member proposes a LeaseRevoke for each; a
// lease still not revoked after the retry interval is reported again.
// Batches are dropped, not queued, when the reader falls behind.
func (le *Lessor) ExpiredLeasesC() <-chan []*Lease { return le.expiredC }

// Stop ends the background loop and waits for it. A Renew waiting on an
// expired lease returns ErrNotPrimary. Safe to call more than once.
func (le *Lessor) Stop() {
	le.stopOnce.Do(func() {
		le.cancel()
		if le.started {
			<-le.donec
		}
	})
}

func (le *Lessor) batch() backend.BatchTx {
	le.mu.RLock()
	defer le.mu.RUnlock()
	return le.be.BatchTx()
}
