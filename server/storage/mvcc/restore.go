package mvcc

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/cairnkv/cairn/server/storage/backend"
)

// Rebuilding the key index at start-up.
//
// The key bucket is ordered by revision, the index by key, so rebuilding
// means one lookup of the key per stored revision. Looking keys up in the
// B-tree makes that the bulk of a restart, so the rebuild runs as a pipeline
// that never touches the tree until the end:
//
//   - the calling goroutine walks the key bucket with one cursor and decodes
//     only the fields the index needs (no KeyValue is unmarshalled);
//   - it deals each entry, by a hash of its key, to one of a few shards, so
//     all revisions of a key go to one shard, in revision order;
//   - each shard keeps a hash map of its keys and replays its entries into
//     their keyIndexes, then sorts its keys;
//   - the sorted shards are merged into the tree, which then receives keys in
//     ascending order.

// restoreBatch is how many entries the reader hands a shard at a time:
// large enough that channel operations do not show, small enough that
// shards start working early.
const restoreBatch = 2048

// LeasedKey is a live key whose newest revision names a lease.
type LeasedKey struct {
	Key   []byte
	Lease int64
}

// restoredEntry is the part of one key-bucket entry the index needs. key
// points into the backend's read transaction, which stays open until every
// shard is done.
type restoredEntry struct {
	key       []byte
	rev       Revision
	tombstone bool
	created   int64
	ver       int64
	lease     int64
}

// restoreShard owns the keys whose hash selects it during a rebuild.
type restoreShard struct {
	lg      *zap.Logger
	in      chan []restoredEntry
	byKey   map[string]*keyIndex
	leases  map[*keyIndex]int64 // live keys naming a lease, as of the newest entry
	ordered []*keyIndex         // byKey's values in key order, once done
}

func newRestoreShard(lg *zap.Logger) *restoreShard {
	return &restoreShard{
		lg:     lg,
		in:     make(chan []restoredEntry, 4),
		byKey:  make(map[string]*keyIndex),
		leases: make(map[*keyIndex]int64),
	}
}

// run replays every batch it receives, then sorts its keys.
func (sh *restoreShard) run() {
	for batch := range sh.in {
		for i := range batch {
			sh.replay(&batch[i])
		}
	}
	sh.ordered = make([]*keyIndex, 0, len(sh.byKey))
	for _, ki := range sh.byKey {
		sh.ordered = append(sh.ordered, ki)
	}
	slices.SortFunc(sh.ordered, func(a, b *keyIndex) int { return strings.Compare(a.key, b.key) })
	sh.byKey = nil
}

// replay applies one entry to its key, as the original write did. created
// and ver seed keys whose earlier revisions were compacted away.
func (sh *restoreShard) replay(e *restoredEntry) {
	ki, ok := sh.byKey[string(e.key)]
	switch {
	case ok && e.tombstone:
		if err := ki.tombstone(e.rev); err != nil {
			// A tombstone of a key that is already deleted: harmless, as in etcd.
			sh.lg.Warn("ignoring tombstone of a deleted key", zap.ByteString("key", e.key), zap.Stringer("revision", e.rev))
		}
	case ok:
		ki.put(e.rev)
	default:
		ki = newKeyIndex(e.key)
		if e.tombstone {
			ki.restoreTombstone(e.rev)
		} else {
			ki.restore(e.created, e.rev, e.ver)
		}
		sh.byKey[ki.key] = ki
	}
	if e.lease != 0 && !e.tombstone {
		sh.leases[ki] = e.lease
	} else {
		delete(sh.leases, ki)
	}
}

// unsafeString views b as a string without copying; b must not change while
// the string is in use.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// indexRebuild is the result of replaying the key bucket.
type indexRebuild struct {
	lastRev int64 // the newest revision found, 0 if none
	leased  []LeasedKey
}

// rebuildIndex replays the key bucket of tx into ti, which must be empty
// and not shared yet.
func rebuildIndex(lg *zap.Logger, tx backend.ReadTx, ti *treeIndex) (indexRebuild, error) {
	return rebuildIndexShards(lg, tx, ti, restoreShards())
}

// rebuildIndexShards is rebuildIndex with n shards.
func rebuildIndexShards(lg *zap.Logger, tx backend.ReadTx, ti *treeIndex, n int) (indexRebuild, error) {
	shards := make([]*restoreShard, n)
	var wg sync.WaitGroup
	for i := range shards {
		shards[i] = newRestoreShard(lg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			shards[i].run()
		}()
	}
	tx.RLock()
	lastRev, err := readKeyBucket(tx, shards)
	for _, sh := range shards {
		close(sh.in)
	}
	wg.Wait() // the shards' entries point into tx: release it only now
	tx.RUnlock()
	if err != nil {
		return indexRebuild{}, err
	}
	return indexRebuild{lastRev: lastRev, leased: mergeShards(ti, shards)}, nil
}

// restoreShards is how many shards a rebuild uses: one per CPU, as the
// reader mostly waits on page faults and decoding is cheap.
func restoreShards() int { return max(1, min(runtime.GOMAXPROCS(0), 8)) }

// readKeyBucket decodes every key-bucket entry of tx and deals it to its
// shard, returning the newest revision. It stops at the first entry that
// cannot be decoded.
func readKeyBucket(tx backend.ReadTx, shards []*restoreShard) (lastRev int64, err error) {
	seed := maphash.MakeSeed()
	pending := make([][]restoredEntry, len(shards))
	err = tx.UnsafeForEach(backend.BucketKey, func(k, v []byte) error {
		e, err := decodeEntry(k, v)
		if err != nil {
			return err
		}
		lastRev = e.rev.Main
		i := int(maphash.Bytes(seed, e.key) % uint64(len(shards)))
		if pending[i] == nil {
			pending[i] = make([]restoredEntry, 0, restoreBatch)
		}
		pending[i] = append(pending[i], e)
		if len(pending[i]) == restoreBatch {
			shards[i].in <- pending[i]
			pending[i] = nil
		}
		return nil
	})
	for i, batch := range pending {
		if len(batch) > 0 {
			shards[i].in <- batch
		}
	}
	return lastRev, err
}

// mergeShards inserts the shards' keys into ti in ascending key order and
// collects the leased keys in key order.
func mergeShards(ti *treeIndex, shards []*restoreShard) []LeasedKey {
	var leased []LeasedKey
	heads := make([]int, len(shards))
	for {
		best := -1
		for i, sh := range shards {
			if heads[i] < len(sh.ordered) &&
				(best < 0 || sh.ordered[heads[i]].key < shards[best].ordered[heads[best]].key) {
				best = i
			}
		}
		if best < 0 {
			return leased
		}
		ki := shards[best].ordered[heads[best]]
		heads[best]++
		ti.tree.ReplaceOrInsert(ki)
		if id, ok := shards[best].leases[ki]; ok {
			leased = append(leased, LeasedKey{Key: ki.keyBytes(), Lease: id})
		}
	}
}

// decodeEntry validates one key-bucket pair and extracts what the index needs.
func decodeEntry(revBytes, value []byte) (restoredEntry, error) {
	if !validRevBytes(revBytes) {
		return restoredEntry{}, fmt.Errorf("mvcc: malformed revision key %x in the key bucket", revBytes)
	}
	e := restoredEntry{rev: BytesToRev(revBytes), tombstone: IsTombstone(revBytes)}
	var err error
	e.key, e.created, e.ver, e.lease, err = decodeIndexFields(value)
	if err != nil {
		return restoredEntry{}, fmt.Errorf("mvcc: decoding the value at revision %v: %w", e.rev, err)
	}
	return e, nil
}

// decodeIndexFields reads only the fields of a marshalled mvccpb.KeyValue
// that the index and the lessor need, so restoring does not copy any value.
func decodeIndexFields(b []byte) (key []byte, created, ver, lease int64, err error) {
	const (
		fieldKey            = 1
		fieldCreateRevision = 2
		fieldVersion        = 4
		fieldLease          = 6
	)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, 0, 0, 0, protowire.ParseError(n)
		}
		b = b[n:]
		var v uint64
		switch {
		case num == fieldKey && typ == protowire.BytesType:
			key, n = protowire.ConsumeBytes(b)
		case typ == protowire.VarintType && (num == fieldCreateRevision || num == fieldVersion || num == fieldLease):
			v, n = protowire.ConsumeVarint(b)
			switch num {
			case fieldCreateRevision:
				created = int64(v)
			case fieldVersion:
				ver = int64(v)
			default:
				lease = int64(v)
			}
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return nil, 0, 0, 0, protowire.ParseError(n)
		}
		b = b[n:]
	}
	return key, created, ver, lease, nil
}
