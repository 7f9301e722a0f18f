package backend

// Online defragmentation.
//
// Defrag writes a compact copy of the db to <path>.tmp while the member goes
// on reading, writing, committing and taking snapshots of the old file, then
// swaps the copy in under the batch and read locks, which it holds only for
// the last few writes, an fsync and the rename:
//
//  1. Start (commit slot, batch lock): open a bbolt read tx on the last commit as the
//     copy's source, and start a journal with the writes released since
//     and every write the batch makes from then on, in every bucket (key,
//     meta, lease, auth, members...). Defrag never commits the batch.
//  2. Bulk copy (no lock): copy every bucket of the source into the new
//     file, then reopen it with the backend's own bbolt options so that the
//     swap does not pay for bbolt's freelist scan.
//  3. Catch up (batch lock only to take the journal): apply to the new file
//     the journaled writes that the old file has committed since; repeat
//     until a round finds only a few.
//  4. Swap (commit slot throughout; batch and read locks only for the
//     rename): apply the last committed writes, fsync, rename over the db
//     file, make the new file the backend's, fsync the directory. The overlay of writes released since the old file's last
//     commit is kept, so readers and the next commit see exactly what they
//     would have seen.
//
// The new file only ever holds a state the old file committed, consistent
// index included, and it is renamed only once it is complete and synced. A
// crash at any step therefore leaves either the old db or the new one,
// each consistent with the WAL; a leftover db.tmp is removed at the next
// start (the snapshotter does it, as etcd's does). The old file stays open
// until the snapshots still reading it are closed.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/failpoint"
	"github.com/cairnkv/cairn/server/metrics"
)

const (
	// defragBatchKeys is how many pairs Defrag writes per bbolt transaction
	// of the new file, bounding the memory of each transaction.
	defragBatchKeys = 10000
	// defragBatchBytes bounds the keys and values of one bulk-copy
	// transaction too. Each is synced before the next, and a WAL fdatasync
	// that comes meanwhile queues behind that write on the disk they
	// share: a few MB per sync (10,000 pairs of 256 B values) put 10-20 ms
	// into the p99 of writes during a defrag. At 256 KiB a WAL-like
	// fdatasync every 2 ms beside a copy syncing each batch still had a p90
	// of 0.84-1.02 ms (0.45 ms alone) and a p99 of 1.5-2.3 ms; at 128 KiB
	// 0.54-0.57 and 0.8-1.4 ms, for a copy about a fifth slower (this
	// machine's virtio disk, ext4; 64 KiB gained no more and halved the
	// copy's speed).
	defragBatchBytes = 128 << 10
	// defragFillPercent packs the new file's pages: keys arrive in order, so
	// pages need little room for later inserts. The key bucket, which only
	// ever grows at its end, is packed full (seqFillPercent): see
	// defragFill.
	defragFillPercent = 0.9
	// defragTailWrites: once a catch-up round finds at most this many
	// writes, the rest is applied during the swap, under the locks.
	defragTailWrites = 2000
	// defragMaxCatchUpRounds bounds the catch-up under a write rate the copy
	// cannot outrun; the swap then applies one round's worth under the locks.
	defragMaxCatchUpRounds = 20
	// defragCopyShare is the share of wall time the bulk copy works; it
	// rests the remainder after each batch, so the member's own requests
	// keep a core and its WAL fsyncs do not queue behind the copy's
	// writeback (on two cores an unpaced copy tripled the p50 of puts).
	defragCopyShare = 0.5
	// defragMaxRest bounds one rest, whatever a slow batch took.
	defragMaxRest = 50 * time.Millisecond
)

// retireDropSlice is how much of a retired file's mapping one madvise
// call drops (see retire).
const retireDropSlice = 16 << 20

// dropInSlices calls drop over [addr, addr+size) in pieces of at most
// slice bytes, pausing between them.
func dropInSlices(drop func(addr uintptr, size int64) error, addr uintptr, size, slice int64, pause time.Duration) {
	for off := int64(0); off < size; off += slice {
		if err := drop(addr+uintptr(off), min(slice, size-off)); err != nil {
			return
		}
		time.Sleep(pause)
	}
}

// defragPacer spaces the bulk copy's batches (see defragCopyShare).
type defragPacer struct {
	now         func() time.Time
	sleep       func(time.Duration)
	since       time.Time     // end of the last rest
	waitedSince time.Duration // waited for disk gaps since then
}

func newDefragPacer() *defragPacer {
	return &defragPacer{now: time.Now, sleep: time.Sleep, since: time.Now()}
}

// rest sleeps in proportion to the work done since the last rest. Time
// spent waiting for a gap in the WAL's syncs since then (waited) is rest
// already taken, not work.
func (p *defragPacer) rest() {
	worked := p.now().Sub(p.since) - p.waitedSince
	due := min(time.Duration(float64(worked)*(1-defragCopyShare)/defragCopyShare), defragMaxRest) - p.waitedSince
	if due > 0 {
		p.sleep(due)
	}
	p.since, p.waitedSince = p.now(), 0
}

// awaitDiskGap waits through await (nil: not at all) and counts the wait
// as rest.
func (p *defragPacer) awaitDiskGap(await func()) {
	if await == nil {
		return
	}
	start := p.now()
	await()
	p.waitedSince += p.now().Sub(start)
}

// defragJournal records, in order, every write the batch makes while a
// defrag runs. It is used under the batch lock only. Positions (end,
// committed) count every write recorded since the journal began, taken
// ones included, so a commit can mark its cut while a catch-up round takes
// older writes.
type defragJournal struct {
	writes []pendingWrite
	taken  int // writes recorded and already taken: writes[0] is number taken
	// committed: the writes before this position are in the old file's
	// last commit.
	committed int
}

// record keeps a copy of w: the journal outlives the commit after which the
// caller may reuse its key and value.
func (j *defragJournal) record(bucket []byte, w bufferedWrite) {
	w.key = bytes.Clone(w.key)
	w.value = bytes.Clone(w.value)
	j.writes = append(j.writes, pendingWrite{bucket: bytes.Clone(bucket), write: w})
}

// end is the position after the last write recorded.
func (j *defragJournal) end() int { return j.taken + len(j.writes) }

// markCommitted notes that the writes before position upTo (an end() of
// the past) are committed.
func (j *defragJournal) markCommitted(upTo int) { j.committed = max(j.committed, upTo) }

// takeCommitted removes and returns the committed writes, oldest first.
func (j *defragJournal) takeCommitted() []pendingWrite {
	n := j.committed - j.taken
	taken := j.writes[:n:n]
	j.writes = j.writes[n:]
	j.taken = j.committed
	return taken
}

// Defrag rewrites the db into a compact new file while readers and writers
// go on (see the top of this file). If it fails before the rename the
// original file is kept and the backend goes on using it. Concurrent calls
// run one after the other.
func (b *backend) Defrag() error {
	b.defragMu.Lock()
	defer b.defragMu.Unlock()
	start := time.Now()
	metrics.DefragInflight.Set(1)
	defer func() {
		metrics.DefragInflight.Set(0)
		metrics.BackendDefragSeconds.Observe(time.Since(start).Seconds())
	}()
	sizeBefore, inUseBefore := b.Size(), b.SizeInUse()
	b.lg.Info("defragmenting", zap.String("path", b.cfg.Path),
		zap.Int64("current-db-size-bytes", sizeBefore),
		zap.Int64("current-db-size-in-use-bytes", inUseBefore))
	if err := b.defragOnline(); err != nil {
		b.lg.Warn("failed to defragment", zap.String("path", b.cfg.Path), zap.Error(err))
		return err
	}
	failpoint.Inject("defragAfterSwap")
	b.lg.Info("finished defragmenting", zap.String("path", b.cfg.Path),
		zap.Int64("current-db-size-bytes-diff", b.Size()-sizeBefore),
		zap.Int64("current-db-size-bytes", b.Size()),
		zap.Int64("current-db-size-in-use-bytes-diff", b.SizeInUse()-inUseBefore),
		zap.Int64("current-db-size-in-use-bytes", b.SizeInUse()),
		zap.Duration("took", time.Since(start)))
	return nil
}

// defragOnline runs the four steps; on error the journal is stopped and the
// new file removed.
func (b *backend) defragOnline() (err error) {
	src, err := b.startDefrag()
	if err != nil {
		return err
	}
	c := &defragCopy{path: b.cfg.Path + ".tmp", b: b}
	defer func() {
		if err != nil {
			b.stopJournal()
			c.discard()
		}
	}()
	failpoint.Inject("defragBeforeCopy")
	err = c.bulk(src)
	if rerr := rollbackView(src); err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	if err = c.catchUp(); err != nil {
		return err
	}
	return b.swapIn(c)
}

// startDefrag opens the copy's source on the last commit and starts the
// journal with the writes released since (not committed yet), all under
// one hold of the batch lock, so the source plus the journal is every
// write. It must not commit: only the member may, at a point where the
// consistent index describes the data (a commit here once caught an entry
// applied without its index, and a crash then replayed it twice). It holds
// the commit slot, so no commit is half written: the last commit is the
// source, and the released writes are exactly what it lacks.
func (b *backend) startDefrag() (*bolt.Tx, error) {
	b.commitSlot <- struct{}{}
	defer func() { <-b.commitSlot }()
	b.batch.mu.Lock()
	defer b.batch.mu.Unlock()
	if b.closed {
		return nil, errClosed
	}
	src, err := b.db.Begin(false)
	if err != nil {
		return nil, fmt.Errorf("backend: defrag: %w", err)
	}
	metrics.OpenReadTxns.Inc()
	j := &defragJournal{}
	for _, bw := range *b.read.released.Load() {
		for _, r := range bw.runs { // oldest first: a newer run wins
			for _, w := range r {
				j.record([]byte(bw.name), w)
			}
		}
	}
	b.batch.journal = j
	return src, nil
}

func (b *backend) stopJournal() {
	b.batch.mu.Lock()
	b.batch.journal = nil
	b.batch.mu.Unlock()
}

// defragCopy is the new file while Defrag builds it.
type defragCopy struct {
	path string
	b    *backend
	db   *bolt.DB
}

// bulk copies src into a new file at c.path, syncs it and reopens it with
// the backend's options.
func (c *defragCopy) bulk(src *bolt.Tx) error {
	if err := removeIfExists(c.path); err != nil {
		return fmt.Errorf("backend: defrag: %w", err)
	}
	opts := *c.b.bopts
	opts.NoSync = true // the file is synced once before it is used
	// No large initial mmap while the file grows: bbolt sizes a file within
	// a small mapping to its contents, so a compacted db comes out as small
	// as etcd's (which copies the same way).
	opts.InitialMmapSize = 0
	opts.Mlock = false
	db, err := openBolt(c.path, &opts)
	if err != nil {
		return fmt.Errorf("backend: defrag: open %s: %w", c.path, err)
	}
	c.db = db
	if err := c.copyBuckets(src); err != nil {
		return fmt.Errorf("backend: defrag: %w", err)
	}
	return c.reopen()
}

// reopen closes the new file and opens it as the backend will use it: the
// full mmap (no remap later while snapshots hold the file) and mlock if
// configured. bbolt rebuilds the freelist by walking the file here, off
// every lock, rather than during the swap.
func (c *defragCopy) reopen() error {
	err := c.db.Sync()
	if cerr := c.db.Close(); err == nil {
		err = cerr
	}
	c.db = nil
	if err != nil {
		return fmt.Errorf("backend: defrag: %w", err)
	}
	opts := *c.b.bopts
	opts.NoSync = true // catch-up rounds sync explicitly
	db, err := openBolt(c.path, &opts)
	if err != nil {
		return fmt.Errorf("backend: defrag: reopen %s: %w", c.path, err)
	}
	c.db = db
	return nil
}

// catchUp applies the committed journal to the new file until a round finds
// few writes. Each round is synced so the swap's fsync has little to write.
func (c *defragCopy) catchUp() error {
	for round := 0; round < defragMaxCatchUpRounds; round++ {
		failpoint.Inject("defragDuringCatchUp")
		if c.b.stopping.Load() {
			return errClosed
		}
		c.b.batch.mu.Lock()
		writes := c.b.batch.journal.takeCommitted()
		c.b.batch.mu.Unlock()
		err := applyToDB(c.db, writes)
		if err == nil {
			c.b.awaitDiskGap()
			err = c.db.Sync()
		}
		if err != nil {
			return fmt.Errorf("backend: defrag: catch up: %w", err)
		}
		if len(writes) <= defragTailWrites {
			break
		}
	}
	if c.b.defragCaughtUp != nil {
		c.b.defragCaughtUp()
	}
	return nil
}

// discard closes and removes the new file after a failure.
func (c *defragCopy) discard() {
	if c.db != nil {
		_ = c.db.Close()
		c.db = nil
	}
	_ = removeIfExists(c.path)
}

// swapIn makes the new file the db. It holds the commit slot throughout,
// so no commit runs: the old file's last commit stays what the new file
// must hold, and nothing is committed into the new file before its name is
// durable. Writers and readers wait only for the rename and the change of
// read view.
func (b *backend) swapIn(c *defragCopy) error {
	b.commitSlot <- struct{}{}
	defer func() { <-b.commitSlot }()
	if err := b.finishCopy(c); err != nil {
		return err
	}
	b.batch.mu.Lock()
	b.read.mu.Lock()
	err := b.renameIn(c)
	b.read.mu.Unlock()
	b.batch.mu.Unlock()
	if err != nil {
		return err
	}
	// From here on the new file is the db whatever happens: the old one
	// has no name any more. The directory is synced before the slot is
	// given back, so no commit lands in a file whose name a crash could
	// still take away.
	if err := syncDir(filepath.Dir(b.cfg.Path)); err != nil {
		b.lg.Fatal("failed to sync the db directory after defrag", zap.String("path", b.cfg.Path), zap.Error(err))
	}
	return nil
}

// finishCopy applies the writes the old file committed since the last
// catch-up round and syncs the new file. The caller holds the commit slot,
// so the journal's committed part cannot grow meanwhile; the batch lock is
// held only to take it.
func (b *backend) finishCopy(c *defragCopy) error {
	b.batch.mu.Lock()
	if b.closed {
		b.batch.mu.Unlock()
		return errClosed
	}
	failpoint.Inject("defragBeforeSwap")
	writes := b.batch.journal.takeCommitted()
	b.batch.mu.Unlock()
	if err := applyToDB(c.db, writes); err != nil {
		return fmt.Errorf("backend: defrag: %w", err)
	}
	c.db.NoSync = b.bopts.NoSync
	if err := c.db.Sync(); err != nil {
		return fmt.Errorf("backend: defrag: %w", err)
	}
	return nil
}

// renameIn renames the new file over the db and makes it the backend's;
// the caller holds the commit slot and both locks.
func (b *backend) renameIn(c *defragCopy) error {
	failpoint.Inject("defragBeforeRename")
	// A descriptor of the old file, which the rename unlinks, so that
	// retire can give its space back gradually (see shrinkInSteps). Without
	// one the old file is freed at once when it closes.
	oldFile, _ := os.OpenFile(b.cfg.Path, os.O_WRONLY, 0)
	if err := os.Rename(c.path, b.cfg.Path); err != nil {
		if oldFile != nil {
			oldFile.Close()
		}
		return fmt.Errorf("backend: defrag: %w", err)
	}
	failpoint.Inject("defragAfterRename")
	b.batch.journal = nil
	b.retire(c.db, oldFile)
	if err := b.showNewFile(); err != nil {
		b.lg.Fatal("failed to begin transactions after defrag", zap.Error(err))
	}
	c.db = nil
	return nil
}

// retire ends the transactions on the old file and makes db the backend's.
// The old file is closed in the background: bbolt's Close waits for the
// snapshots that still read it. unlinked, if not nil, is a descriptor of
// the old file, which no longer has a name. The caller holds both locks.
func (b *backend) retire(db *bolt.DB, unlinked *os.File) {
	b.read.close()
	old := b.db
	b.db = db
	b.retired.Add(1)
	mapped, size := old.Info().Data, b.size.Load()
	go func() {
		defer b.retired.Done()
		// Closing unmaps the old file. munmap holds the process's memory
		// map lock for writing while it tears down every resident page
		// (most of a file that defrag just read), and every page fault of
		// the member waits for it: puts in the seconds after a 1M-key
		// defrag had a p99 ten times etcd's. Dropping the pages first, a
		// slice at a time, costs only read holds of that lock; a snapshot
		// still reading the old file faults its pages back in.
		if !b.cfg.Mlock {
			dropInSlices(dropMapping, mapped, size, retireDropSlice, time.Millisecond)
		}
		if err := old.Close(); err != nil {
			b.lg.Warn("failed to close the db file replaced by defrag", zap.Error(err))
		}
		if unlinked != nil {
			if st, err := unlinked.Stat(); err == nil {
				release := func(size int64) error {
					b.awaitDiskGap()
					return unlinked.Truncate(size)
				}
				shrinkInSteps(release, st.Size(), retireShrinkStep, retireShrinkPause)
			}
			unlinked.Close()
		}
	}()
}

// retireShrinkStep and retireShrinkPause pace the release of a retired
// file's blocks (see shrinkInSteps). Traced at 1M keys, one 16 MiB step
// took 17 ms and every WAL fdatasync meanwhile waited for it: the probe's
// p99 in the 10 s after a defrag was 3-9x its idle p99. At 1 MiB a step
// is about 0.7 ms and the after-defrag p99 came down to about twice idle;
// a WAL-like fdatasync every 2 ms beside the release had a p99 of
// 0.9-1.6 ms at 1 MiB steps, 0.64-0.74 ms at 256 KiB (0.53-0.74 ms with
// nothing beside it). At 256 KiB every 10 ms a file is freed at about
// 25 MB/s: 1.4 GB in a minute.
const (
	retireShrinkStep  = 256 << 10
	retireShrinkPause = 10 * time.Millisecond
)

// shrinkInSteps truncates a file of size bytes to nothing, step bytes at a
// time with a pause in between. Freeing the blocks of a file of hundreds
// of MB at once (its last close after the rename) is one large filesystem
// journal transaction, and the WAL's next fdatasync waits for it; a step
// at a time, each journal commit carries a little of it. It stops at the
// first error: the rest is freed when the file closes.
func shrinkInSteps(truncate func(size int64) error, size, step int64, pause time.Duration) {
	for size > 0 {
		size = max(size-step, 0)
		if truncate(size) != nil {
			return
		}
		time.Sleep(pause)
	}
}

// awaitDiskGap returns when a bulk sync disturbs the WAL least (see
// Config.AwaitDiskGap).
func (b *backend) awaitDiskGap() {
	if b.cfg.AwaitDiskGap != nil {
		b.cfg.AwaitDiskGap()
	}
}

// showNewFile opens the read view on the new db. It holds the old file's
// last commit, and the released writes it lacks stay the overlay: readers
// see exactly what they saw, and the next commit writes those writes into
// the new file.
func (b *backend) showNewFile() error {
	rtx, err := b.db.Begin(false)
	if err != nil {
		return err
	}
	b.read.show(rtx)
	b.refreshCommitted(rtx)
	return nil
}

// defragFill is how full the new file packs the pages of bucket: the key
// bucket is written only at its end once the file is in use, so it is
// packed as its commits pack it; the small buckets take inserts anywhere
// and keep some room.
func defragFill(bucket []byte) float64 {
	if bytes.Equal(bucket, BucketKey) {
		return seqFillPercent
	}
	return defragFillPercent
}

// applyToDB writes ws into db in order, defragBatchKeys per transaction.
func applyToDB(db *bolt.DB, ws []pendingWrite) error {
	for len(ws) > 0 {
		n := min(len(ws), defragBatchKeys)
		if err := db.Update(func(tx *bolt.Tx) error { return applyToTx(tx, ws[:n]) }); err != nil {
			return err
		}
		ws = ws[n:]
	}
	return nil
}

// applyToTx writes ws into tx in order, creating buckets as needed.
func applyToTx(tx *bolt.Tx, ws []pendingWrite) error {
	for _, w := range ws {
		bucket, err := tx.CreateBucketIfNotExists(w.bucket)
		if err != nil {
			return err
		}
		bucket.FillPercent = defragFill(w.bucket)
		if w.write.deleted {
			err = bucket.Delete(w.write.key)
		} else {
			err = bucket.Put(w.write.key, w.write.value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// copyBuckets copies every bucket of src into the new file, committing and
// syncing it every batch (see defragWriter).
func (c *defragCopy) copyBuckets(src *bolt.Tx) error {
	pacer := newDefragPacer()
	w := &defragWriter{db: c.db, afterCommit: func() error {
		failpoint.Inject("defragDuringCopy")
		// Each batch goes to disk before the next: one fsync of the whole
		// copy at the end would flood the disk the WAL shares. It goes
		// right after one of the WAL's syncs, not into the next.
		pacer.awaitDiskGap(c.b.cfg.AwaitDiskGap)
		if err := c.db.Sync(); err != nil {
			return err
		}
		pacer.rest()
		if c.b.stopping.Load() {
			return errClosed
		}
		if c.b.defragCopied != nil {
			return c.b.defragCopied()
		}
		return nil
	}}
	err := src.ForEach(func(name []byte, bucket *bolt.Bucket) error {
		if err := w.openBucket(name); err != nil {
			return err
		}
		return bucket.ForEach(w.put)
	})
	return w.finish(err)
}

// defragWriter writes into the new file in transactions of at most
// defragBatchKeys pairs and about defragBatchBytes.
type defragWriter struct {
	db          *bolt.DB
	tx          *bolt.Tx
	name        []byte
	bucket      *bolt.Bucket
	count       int // pairs in tx
	bytes       int // their keys' and values' bytes
	afterCommit func() error
}

func (w *defragWriter) openBucket(name []byte) error {
	if w.tx == nil {
		tx, err := w.db.Begin(true)
		if err != nil {
			return err
		}
		w.tx = tx
	}
	bucket, err := w.tx.CreateBucketIfNotExists(name)
	if err != nil {
		return err
	}
	bucket.FillPercent = defragFill(name)
	w.name, w.bucket = name, bucket
	return nil
}

func (w *defragWriter) put(k, v []byte) error {
	if w.count == defragBatchKeys || w.bytes >= defragBatchBytes {
		if err := w.commit(); err != nil {
			return err
		}
		if err := w.openBucket(w.name); err != nil {
			return err
		}
	}
	w.bytes += len(k) + len(v)
	if w.count++; w.count%writesPerYield == 0 {
		runtime.Gosched() // see writesPerYield
	}
	return w.bucket.Put(k, v)
}

func (w *defragWriter) commit() error {
	err := w.tx.Commit()
	w.tx, w.bucket, w.count, w.bytes = nil, nil, 0, 0
	if err == nil && w.afterCommit != nil {
		err = w.afterCommit()
	}
	return err
}

// finish commits the last batch, or rolls it back if copying failed.
func (w *defragWriter) finish(copyErr error) error {
	if w.tx == nil {
		return copyErr
	}
	if copyErr != nil {
		_ = w.tx.Rollback()
		return copyErr
	}
	return w.commit()
}
