package mvcc

// Key index checkpoint.
//
// Rebuilding the key index reads every revision in the key bucket, which
// is most of a restart of a large store. On a clean stop the member may
// write the index to a file instead (WriteIndexCheckpoint), and the next
// start reads that file rather than the key bucket (StoreConfig.IndexCheckpoint).
//
// The checkpoint is never needed for correctness. It names the backend
// commit it describes (backend.CommitID: bbolt's transaction ID, the file
// size and the key bucket's root page), and New uses it only if the db is
// still at exactly that commit: any later write, by cairn, etcd or a tool,
// makes it stale. A missing, stale, truncated or corrupt checkpoint (it
// ends in a CRC-32C of its content) falls back to the rebuild. New removes
// the file once it has read it, so a checkpoint describes at most one
// start. It is written only when no compaction is half done, so the index
// it holds is exactly the one a rebuild would produce.
//
// Layout, integers as unsigned varints unless said:
//
//	magic "cairn-ix1"
//	commit: TxID, Size, KeyRoot; lastRev; number of keys
//	per key, ascending: key length, key, lease of its newest revision (0
//	if none), number of generations, then per generation oldest first:
//	created, ver, number of revisions, and per revision the main
//	revision's increase over the previous one of the key (the first as is)
//	and the sub revision
//	CRC-32C (Castagnoli) of everything above, 4 bytes little-endian

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/server/storage/backend"
)

const checkpointMagic = "cairn-ix1"

var checkpointTable = crc32.MakeTable(crc32.Castagnoli)

// errCheckpointStale: the checkpoint describes another commit of the db.
var errCheckpointStale = errors.New("the db was committed to after the checkpoint was written")

// WriteIndexCheckpoint writes the key index to path, for the next New on
// the same db (see StoreConfig.IndexCheckpoint). commit is the backend's
// CommitID after its last commit, and leased the live keys whose newest
// revision names a lease (the lessor's attachments), which the rebuild
// would have found. Call it after Close, with the backend committed and no
// writer left; it writes nothing while a compaction is half done (the
// backend then still holds revisions the index has dropped).
func (s *Store) WriteIndexCheckpoint(path string, commit backend.CommitID, leased []LeasedKey) error {
	if !s.compactor.idle() {
		return errors.New("mvcc: a compaction is not finished; no index checkpoint")
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("mvcc: index checkpoint: %w", err)
	}
	err = s.encodeCheckpoint(f, commit, leased)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// No fsync: a checkpoint lost or torn by a crash only costs a rebuild.
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("mvcc: index checkpoint: %w", err)
	}
	return nil
}

func (s *Store) encodeCheckpoint(w io.Writer, commit backend.CommitID, leased []LeasedKey) error {
	crc := crc32.New(checkpointTable)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<20)
	leases := make(map[string]int64, len(leased))
	for _, lk := range leased {
		leases[string(lk.Key)] = lk.Lease
	}
	var buf []byte
	buf = append(buf, checkpointMagic...)
	buf = binary.AppendUvarint(buf, commit.TxID)
	buf = binary.AppendUvarint(buf, uint64(commit.Size))
	buf = binary.AppendUvarint(buf, commit.KeyRoot)
	buf = binary.AppendUvarint(buf, uint64(s.Rev())) // what a rebuild finds, see restore
	buf = binary.AppendUvarint(buf, uint64(s.index.Len()))
	var werr error
	s.index.mu.RLock()
	defer s.index.mu.RUnlock()
	s.index.tree.Ascend(func(ki *keyIndex) bool {
		buf = appendKeyIndex(buf, ki, leases[ki.key])
		if len(buf) >= 64<<10 {
			_, werr = bw.Write(buf)
			buf = buf[:0]
		}
		return werr == nil
	})
	if werr != nil {
		return werr
	}
	if _, err := bw.Write(buf); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

func appendKeyIndex(buf []byte, ki *keyIndex, lease int64) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(ki.key)))
	buf = append(buf, ki.key...)
	buf = binary.AppendUvarint(buf, uint64(lease))
	n := ki.numGenerations()
	buf = binary.AppendUvarint(buf, uint64(n))
	var prevMain int64
	for i := range n {
		g := ki.generation(i)
		created, ver := g.created, g.ver
		if i < n-1 && len(g.revs) == 1 {
			// Compacted down to its tombstone: no read sees its creation
			// or version, and the rebuild, which finds only the
			// tombstone, sets them as restoreTombstone does.
			created, ver = 0, 1
		}
		buf = binary.AppendUvarint(buf, uint64(created))
		buf = binary.AppendUvarint(buf, uint64(ver))
		buf = binary.AppendUvarint(buf, uint64(len(g.revs)))
		for _, r := range g.revs {
			buf = binary.AppendUvarint(buf, uint64(r.Main-prevMain))
			buf = binary.AppendUvarint(buf, uint64(r.Sub))
			prevMain = r.Main
		}
	}
	return buf
}

// loadIndexCheckpoint fills the empty index from the checkpoint at path if
// it describes the backend's current commit, and removes the file. ok is
// false (and the index empty) when there is none or it cannot be used;
// the reason is logged.
func (s *Store) loadIndexCheckpoint(path string) (_ indexRebuild, ok bool) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return indexRebuild{}, false
	}
	if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		s.lg.Warn("failed to remove the key index checkpoint", zap.String("path", path), zap.Error(rerr))
	}
	var rebuilt indexRebuild
	if err == nil {
		rebuilt, err = decodeCheckpoint(data, s.b.CommitID(), s.index)
	}
	if err != nil {
		s.index = newTreeIndex()
		s.lg.Info("not using the key index checkpoint; rebuilding the index from the db",
			zap.String("path", path), zap.Error(err))
		return indexRebuild{}, false
	}
	s.lg.Info("loaded the key index from its checkpoint", zap.String("path", path), zap.Int("keys", s.index.Len()))
	return rebuilt, true
}

// decodeCheckpoint checks data against commit and loads its keys into the
// empty index ti.
func decodeCheckpoint(data []byte, commit backend.CommitID, ti *treeIndex) (indexRebuild, error) {
	if len(data) < len(checkpointMagic)+4 || string(data[:len(checkpointMagic)]) != checkpointMagic {
		return indexRebuild{}, errors.New("not an index checkpoint")
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, checkpointTable) != sum {
		return indexRebuild{}, errors.New("checksum mismatch (truncated or corrupt)")
	}
	r := &checkpointReader{b: body[len(checkpointMagic):]}
	written := backend.CommitID{TxID: r.uvarint(), Size: int64(r.uvarint()), KeyRoot: r.uvarint()}
	lastRev, keys := int64(r.uvarint()), r.uvarint()
	if r.err == nil && written != commit {
		return indexRebuild{}, fmt.Errorf("%w (checkpoint of %+v, db at %+v)", errCheckpointStale, written, commit)
	}
	var leased []LeasedKey
	var prev string
	for i := uint64(0); i < keys && r.err == nil; i++ {
		ki, lease := r.keyIndex()
		if r.err != nil {
			break
		}
		if i > 0 && ki.key <= prev {
			return indexRebuild{}, fmt.Errorf("key %q out of order", ki.key)
		}
		prev = ki.key
		ti.tree.ReplaceOrInsert(ki)
		if lease != 0 {
			leased = append(leased, LeasedKey{Key: ki.keyBytes(), Lease: lease})
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errors.New("trailing bytes")
	}
	if r.err != nil {
		return indexRebuild{}, r.err
	}
	return indexRebuild{lastRev: lastRev, leased: leased}, nil
}

// checkpointReader decodes a checkpoint body; the first error sticks and
// every later read returns zero.
type checkpointReader struct {
	b   []byte
	err error
}

func (r *checkpointReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("malformed number")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a length that must fit in what is left of the body.
func (r *checkpointReader) count(unit int) int {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)/unit) {
		r.err = errors.New("length beyond the end")
		return 0
	}
	return int(n)
}

func (r *checkpointReader) keyIndex() (*keyIndex, int64) {
	n := r.count(1)
	if r.err != nil {
		return nil, 0
	}
	ki := &keyIndex{key: string(r.b[:n])}
	r.b = r.b[n:]
	lease := int64(r.uvarint())
	gens := r.count(3)
	if r.err == nil && gens == 0 {
		r.err = fmt.Errorf("key %q without generations", ki.key)
	}
	var prevMain int64
	for i := 0; i < gens && r.err == nil; i++ {
		g := generation{created: int64(r.uvarint()), ver: int64(r.uvarint())}
		g.revs = make([]Revision, r.count(2))
		for j := range g.revs {
			prevMain += int64(r.uvarint())
			g.revs[j] = Revision{Main: prevMain, Sub: int64(r.uvarint())}
		}
		if i < gens-1 {
			if ki.past == nil {
				past := make([]generation, 0, gens-1)
				ki.past = &past
			}
			*ki.past = append(*ki.past, g)
		} else {
			ki.cur = g
		}
	}
	return ki, lease
}
