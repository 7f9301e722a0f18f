package mvcc

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/metrics"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// valuesPerReadLock bounds how many values a Range reads per backend read
// lock: the writer's Unlock waits for that lock, so long ranges let it in
// between chunks. Values at readable revisions never change, so a range read
// in chunks is still consistent.
const valuesPerReadLock = 256

// valueReader is where a transaction reads values from: the shared ReadTx
// for a read transaction, the batch it holds for the write transaction.
type valueReader interface {
	backend.UnsafeReader
	RLock()
	RUnlock()
}

// heldBatch reads through the BatchTx the write transaction already holds.
type heldBatch struct{ backend.BatchTx }

func (heldBatch) RLock()   {}
func (heldBatch) RUnlock() {}

// Read opens a read transaction at the current revision.
func (s *Store) Read() TxnRead {
	s.txnMu.RLock()
	s.revMu.RLock()
	first, rev := s.compactMainRev, s.currentRev
	s.revMu.RUnlock()
	return &readTxn{s: s, reader: s.b.ReadTx(), firstRev: first, rev: rev}
}

// Write opens the write transaction; it holds the backend batch until End.
// Do not call Compact, Close or Write while holding it.
func (s *Store) Write() TxnWrite {
	s.txnMu.RLock()
	tx := s.b.BatchTx()
	tx.Lock()
	s.revMu.RLock()
	first, rev := s.compactMainRev, s.currentRev
	s.revMu.RUnlock()
	t := &writeTxn{s: s, tx: tx, firstRev: first, beginRev: rev}
	t.changes = t.first[:0]
	return t
}

// Range reads in its own read transaction.
func (s *Store) Range(ctx context.Context, key, end []byte, ro RangeOptions) (*RangeResult, error) {
	txn := s.Read()
	defer txn.End()
	return txn.Range(ctx, key, end, ro)
}

// Put writes in its own write transaction.
func (s *Store) Put(key, value []byte, lease int64) int64 {
	txn := s.Write()
	defer txn.End()
	return txn.Put(key, value, lease)
}

// DeleteRange deletes in its own write transaction.
func (s *Store) DeleteRange(key, end []byte) (n, rev int64) {
	txn := s.Write()
	defer txn.End()
	return txn.DeleteRange(key, end)
}

type readTxn struct {
	s        *Store
	reader   valueReader
	firstRev int64
	rev      int64
}

func (t *readTxn) FirstRev() int64 { return max(t.firstRev, 0) }
func (t *readTxn) Rev() int64      { return t.rev }
func (t *readTxn) End()            { t.s.txnMu.RUnlock() }

func (t *readTxn) Range(ctx context.Context, key, end []byte, ro RangeOptions) (*RangeResult, error) {
	return t.s.rangeKeys(ctx, t.reader, key, end, t.rev, t.firstRev, ro)
}

// rangeKeys serves a Range at ro.Rev for a transaction whose view is at
// curRev: revisions come from the index, values from the backend.
func (s *Store) rangeKeys(ctx context.Context, r valueReader, key, end []byte, curRev, compactRev int64, ro RangeOptions) (*RangeResult, error) {
	rev := ro.Rev
	if rev > curRev {
		return nil, errs.ErrFutureRev
	}
	if rev <= 0 {
		rev = curRev
	}
	// The compacted revision itself stays readable: compaction keeps its state.
	if rev < compactRev {
		return nil, errs.ErrCompacted
	}
	if ro.Count {
		return &RangeResult{Rev: curRev, Count: s.index.CountRevisions(key, end, rev)}, nil
	}
	revs, total := s.index.Revisions(key, end, rev, int(ro.Limit))
	kvs, err := readValues(ctx, r, revs)
	if err != nil {
		return nil, err
	}
	return &RangeResult{KVs: kvs, Rev: curRev, Count: total}, nil
}

// readValues fetches the KeyValue stored at each of revs, in order.
func readValues(ctx context.Context, r valueReader, revs []Revision) ([]*mvccpb.KeyValue, error) {
	if len(revs) == 0 {
		return nil, nil
	}
	kvs := make([]*mvccpb.KeyValue, 0, len(revs))
	buf := make([]byte, 0, revBytesLen)
	for len(kvs) < len(revs) {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("mvcc: range cancelled: %w", err)
		}
		chunk := revs[len(kvs):min(len(revs), len(kvs)+valuesPerReadLock)]
		r.RLock()
		for _, rev := range chunk {
			buf = appendRevBytes(buf[:0], rev, false)
			_, vals := r.UnsafeRange(backend.BucketKey, buf, nil, 0)
			if len(vals) != 1 {
				r.RUnlock()
				return nil, fmt.Errorf("mvcc: revision %v of the key index is missing from the backend", rev)
			}
			kv := &mvccpb.KeyValue{}
			if err := proto.Unmarshal(vals[0], kv); err != nil {
				r.RUnlock()
				return nil, fmt.Errorf("mvcc: decoding the value at revision %v: %w", rev, err)
			}
			kvs = append(kvs, kv)
		}
		r.RUnlock()
	}
	return kvs, nil
}

// writeTxn is the single write transaction. Its changes go to the batch and
// the index at once (readers do not see them: the index answers by revision
// and the batch releases them only on End), and End makes them current.
type writeTxn struct {
	s        *Store
	tx       backend.BatchTx
	firstRev int64
	beginRev int64
	changes  []*mvccpb.KeyValue
	// first backs changes until a second change: most write transactions
	// are a single put, which then needs no slice of its own.
	first [1]*mvccpb.KeyValue
}

func (t *writeTxn) FirstRev() int64 { return max(t.firstRev, 0) }
func (t *writeTxn) Rev() int64      { return t.beginRev }

// viewRev is the revision that includes this transaction's own changes.
func (t *writeTxn) viewRev() int64 {
	if len(t.changes) > 0 {
		return t.beginRev + 1
	}
	return t.beginRev
}

func (t *writeTxn) Range(ctx context.Context, key, end []byte, ro RangeOptions) (*RangeResult, error) {
	return t.s.rangeKeys(ctx, heldBatch{t.tx}, key, end, t.viewRev(), t.firstRev, ro)
}

// Changes returns the KVs written so far; a deletion appears as a KeyValue
// with only Key and ModRevision. Keys and values share the callers' slices.
func (t *writeTxn) Changes() []*mvccpb.KeyValue { return t.changes }

func (t *writeTxn) Put(key, value []byte, lease int64) int64 {
	rev := t.beginRev + 1
	idxRev := Revision{Main: rev, Sub: int64(len(t.changes))}
	// One index lookup records the change and tells the key's generation
	// as it is with it (earlier changes of this transaction included).
	created, ver := t.s.index.Put(key, idxRev)
	kv := &mvccpb.KeyValue{
		Key:            key,
		Value:          value,
		CreateRevision: created,
		ModRevision:    rev,
		Version:        ver,
		Lease:          lease,
	}
	revKey, stored := encodeRevision(idxRev, kv)
	t.tx.UnsafeSeqPut(backend.BucketKey, revKey, stored)
	metrics.TotalPutSize.Add(float64(len(key) + len(value)))
	t.changes = append(t.changes, kv)
	return rev
}

func (t *writeTxn) DeleteRange(key, end []byte) (n, rev int64) {
	keys, _ := t.s.index.Range(key, end, t.viewRev())
	for _, k := range keys {
		t.delete(k)
	}
	return int64(len(keys)), t.viewRev()
}

// delete writes a tombstone for a live key. Its stored value is a KeyValue
// with only the key set, as in etcd.
func (t *writeTxn) delete(key []byte) {
	idxRev := Revision{Main: t.beginRev + 1, Sub: int64(len(t.changes))}
	t.tx.UnsafeSeqPut(backend.BucketKey, TombstoneRevToBytes(idxRev), mustMarshal(&mvccpb.KeyValue{Key: key}))
	if err := t.s.index.Tombstone(key, idxRev); err != nil {
		// The key came from the index at this very revision.
		t.s.lg.Panic("tombstone of a key the index just listed failed", zap.ByteString("key", key), zap.Error(err))
	}
	t.changes = append(t.changes, &mvccpb.KeyValue{Key: key, ModRevision: idxRev.Main})
}

// End publishes the changes: they are queued for the watchers, then the
// revision moves while the batch is still locked, so a reader that sees the
// new revision also sees its values, and a watcher added later starts after
// it. The fan-out to the watchers happens on the hub's dispatcher.
func (t *writeTxn) End() {
	if len(t.changes) > 0 {
		t.s.watch.notify(t.beginRev+1, t.changes, t.publish)
	} else {
		t.tx.Unlock()
	}
	t.s.txnMu.RUnlock()
}

// publish makes the changes current and releases the batch.
func (t *writeTxn) publish() {
	t.s.revMu.Lock()
	t.s.currentRev++
	t.tx.Unlock()
	t.s.revMu.Unlock()
}

// mustMarshal encodes kv; a KeyValue has no field that can fail to encode.
func mustMarshal(kv *mvccpb.KeyValue) []byte {
	data, err := proto.Marshal(kv)
	if err != nil {
		panic(fmt.Sprintf("mvcc: marshalling a KeyValue: %v", err))
	}
	return data
}
