package lease

import (
	"encoding/binary"
	"fmt"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/lease/leasepb"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// leaseKey is a lease's key in the lease bucket: its ID, 8 bytes big endian.
func leaseKey(id LeaseID) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(id))
}

// putLease writes l's record; the caller holds the batch lock.
func putLease(tx backend.UnsafeWriter, l *Lease) {
	rec := leasepb.Lease{ID: int64(l.id), TTL: l.ttl, RemainingTTL: l.CheckpointedTTL()}
	tx.UnsafePut(backend.BucketLease, leaseKey(l.id), rec.Marshal())
}

// deleteLease removes lease id's record; the caller holds the batch lock.
func deleteLease(tx backend.UnsafeWriter, id LeaseID) {
	tx.UnsafeDelete(backend.BucketLease, leaseKey(id))
}

// readLeases decodes every record of be's lease bucket, raising TTLs below
// minTTL (the minimum may have grown since the grant).
func readLeases(be backend.Backend, minTTL int64, clock Clock) (map[LeaseID]*Lease, error) {
	leases := make(map[LeaseID]*Lease)
	tx := be.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	err := tx.UnsafeForEach(backend.BucketLease, func(k, v []byte) error {
		var rec leasepb.Lease
		if err := rec.Unmarshal(v); err != nil {
			return fmt.Errorf("lease: record %x: %w", k, err)
		}
		id := LeaseID(rec.ID)
		leases[id] = newLease(id, max(rec.TTL, minTTL), rec.RemainingTTL, clock)
		return nil
	})
	return leases, err
}

// load replaces the lessor's leases with be's, without attachments. On the
// primary the loaded leases start counting down from now.
func (le *Lessor) load(be backend.Backend, newTxn func() TxnDeleter) error {
	leases, err := readLeases(be, le.minTTL, le.clock)
	if err != nil {
		return err
	}
	le.mu.Lock()
	defer le.mu.Unlock()
	le.be, le.newTxn = be, newTxn
	le.leases = leases
	le.items = make(map[string]LeaseID)
	le.expiries = newTimeQueue()
	le.checkpoints = newTimeQueue()
	if le.isPrimary() {
		le.refreshAll(le.clock.Now(), 0)
	}
	return nil
}

// Recover replaces every lease with those of be (after the member restored
// a snapshot into a new backend) and switches Revoke to newTxn. Keys are
// detached: call RecoverAttachments once the mvcc store is restored too.
// Apply step only.
func (le *Lessor) Recover(be backend.Backend, newTxn func() TxnDeleter) error {
	return le.load(be, newTxn)
}

// RecoverAttachments attaches each key of leased to the lease it names, as
// etcd does while restoring its key index; leased comes from the mvcc
// store's TakeRestoredLeases, so no key is read twice at start-up. A key
// naming an unknown lease is logged and skipped. Call it after NewLessor or
// Recover, before applying further entries.
func (le *Lessor) RecoverAttachments(leased []mvcc.LeasedKey) {
	for _, lk := range leased {
		le.attachRecovered(LeaseID(lk.Lease), string(lk.Key))
	}
}

func (le *Lessor) attachRecovered(id LeaseID, key string) {
	if id == NoLease {
		return
	}
	if err := le.Attach(id, []string{key}); err != nil {
		le.lg.Error("failed to attach a key to its lease", zap.String("key", key), zap.Int64("lease-id", int64(id)), zap.Error(err))
	}
}

// batchOnly stands in for a missing Config.NewTxn: it holds the batch lock
// so Revoke can remove the lease record, and deletes no keys.
type batchOnly struct{ tx backend.BatchTx }

func (b batchOnly) DeleteRange(_, _ []byte) (n, rev int64) { return 0, 0 }
func (b batchOnly) End()                                   { b.tx.Unlock() }

func openTxn(be backend.Backend, newTxn func() TxnDeleter) TxnDeleter {
	if newTxn != nil {
		return newTxn()
	}
	tx := be.BatchTx()
	tx.Lock()
	return batchOnly{tx}
}
