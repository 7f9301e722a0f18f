package lease

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cairnkv/cairn/pkg/fakeclock"
	"github.com/cairnkv/cairn/server/lease/leasepb"
	"github.com/cairnkv/cairn/server/storage/backend"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is a Clock that moves only when told; its tickers fire only on Tick.
type fakeClock struct {
	*fakeclock.Clock
	mu      sync.Mutex
	tickers []*fakeTicker
}

func newFakeClock() *fakeClock {
	return &fakeClock{Clock: fakeclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
}

func (c *fakeClock) NewTicker(time.Duration) Ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTicker{c: make(chan time.Time, 1)}
	c.tickers = append(c.tickers, t)
	return t
}

// Tick fires every ticker once (a tick still pending is not doubled).
func (c *fakeClock) Tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.tickers {
		select {
		case t.c <- c.Now():
		default:
		}
	}
}

type fakeTicker struct{ c chan time.Time }

func (t *fakeTicker) C() <-chan time.Time { return t.c }
func (t *fakeTicker) Stop()               {}

// fakeDeleter records DeleteRange calls; like mvcc's write txn it holds
// the backend's batch lock until End.
type fakeDeleter struct {
	tx  backend.BatchTx
	log *deleteLog
}

type deleteLog struct {
	txns    int
	ended   int
	deletes [][]string // per txn: "key" for each DeleteRange(key, nil)
}

func (d *fakeDeleter) DeleteRange(key, end []byte) (n, rev int64) {
	if end != nil {
		panic("lease revoke deletes single keys")
	}
	cur := &d.log.deletes[len(d.log.deletes)-1]
	*cur = append(*cur, string(key))
	return 1, 0
}

func (d *fakeDeleter) End() {
	d.log.ended++
	d.tx.Unlock()
}

func (l *deleteLog) newTxn(be backend.Backend) func() TxnDeleter {
	return func() TxnDeleter {
		tx := be.BatchTx()
		tx.Lock()
		l.txns++
		l.deletes = append(l.deletes, nil)
		return &fakeDeleter{tx: tx, log: l}
	}
}

// testEnv is a lessor without its background loop, on a temporary backend,
// with a fake clock: tests drive ticks themselves.
type testEnv struct {
	le    *Lessor
	be    backend.Backend
	clock *fakeClock
	dels  *deleteLog
}

func newEnv(t *testing.T, cfg Config) *testEnv {
	t.Helper()
	e := &testEnv{clock: newFakeClock(), dels: &deleteLog{}}
	if cfg.Backend == nil {
		cfg.Backend, _ = backend.NewTmpBackend(t)
	}
	e.be = cfg.Backend
	if cfg.NewTxn == nil {
		cfg.NewTxn = e.dels.newTxn(e.be)
	}
	if cfg.Clock == nil {
		cfg.Clock = e.clock
	}
	le, err := newLessor(cfg)
	if err != nil {
		t.Fatalf("newLessor: %v", err)
	}
	t.Cleanup(le.Stop)
	e.le = le
	return e
}

func (e *testEnv) mustGrant(t *testing.T, id LeaseID, ttl int64) *Lease {
	t.Helper()
	l, err := e.le.Grant(id, ttl)
	if err != nil {
		t.Fatalf("Grant(%d, %d): %v", id, ttl, err)
	}
	return l
}

// expired runs one tick and returns the batch it reported, nil if none.
func (e *testEnv) expired() []LeaseID {
	e.le.tick()
	select {
	case ls := <-e.le.ExpiredLeasesC():
		return ids(ls)
	default:
		return nil
	}
}

func ids(ls []*Lease) []LeaseID {
	out := make([]LeaseID, len(ls))
	for i, l := range ls {
		out[i] = l.ID()
	}
	return out
}

// records reads the lease bucket.
func records(t *testing.T, be backend.Backend) map[LeaseID]leasepb.Lease {
	t.Helper()
	out := make(map[LeaseID]leasepb.Lease)
	tx := be.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	err := tx.UnsafeForEach(backend.BucketLease, func(k, v []byte) error {
		var rec leasepb.Lease
		if err := rec.Unmarshal(v); err != nil {
			return err
		}
		if len(k) != 8 || LeaseID(binary.BigEndian.Uint64(k)) != LeaseID(rec.ID) {
			t.Errorf("record key %x does not match ID %d", k, rec.ID)
		}
		out[LeaseID(rec.ID)] = rec
		return nil
	})
	if err != nil {
		t.Fatalf("reading the lease bucket: %v", err)
	}
	return out
}
