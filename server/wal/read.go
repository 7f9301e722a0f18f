package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/cairnkv/cairn/pkg/fileutil"
	"github.com/cairnkv/cairn/server/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// replay folds the records of a log into the state a reader needs. The same
// rules serve ReadAll, Verify and ValidSnapshotEntries.
type replay struct {
	start       walpb.Snapshot // replay point; entries at or below it are skipped
	keepEntries bool

	metadata  []byte
	state     *raftpb.HardState
	ents      []*raftpb.Entry
	lastIndex uint64 // index of the last entry or snapshot seen
	matched   bool   // a snapshot record equal to start was seen
	snaps     []walpb.Snapshot
}

func newReplay(start walpb.Snapshot, keepEntries bool) *replay {
	return &replay{start: start, keepEntries: keepEntries, state: &raftpb.HardState{}}
}

// run decodes records until the end of the log. It returns the decoder's
// final error: io.EOF, a torn-tail error, or corruption.
func (r *replay) run(d *decoder) error {
	var rec walpb.Record
	for {
		if err := d.decode(&rec); err != nil {
			return err
		}
		if err := r.apply(&rec, d.path()); err != nil {
			return err
		}
	}
}

func (r *replay) apply(rec *walpb.Record, path string) error {
	switch rec.Type {
	case entryType:
		return r.entry(rec.Data, path)
	case stateType:
		st := &raftpb.HardState{}
		if err := proto.Unmarshal(rec.Data, st); err != nil {
			return fmt.Errorf("wal: corrupt hard state in %s: %v", path, err)
		}
		r.state = st
	case metadataType:
		if r.metadata != nil && !bytes.Equal(r.metadata, rec.Data) {
			return fmt.Errorf("%w in %s", ErrMetadataConflict, path)
		}
		r.metadata = rec.Data
	case crcType:
		// The decoder has already checked the CRC chain.
	case snapshotType:
		return r.snapshot(rec.Data, path)
	default:
		return fmt.Errorf("wal: unexpected record type %d in %s", rec.Type, path)
	}
	return nil
}

// entry adds an entry after the replay point. An entry whose index is
// already present replaces it and everything after it: the leader that
// wrote it overruled the uncommitted tail.
func (r *replay) entry(data []byte, path string) error {
	term, index, err := entryPosition(data)
	if err != nil {
		return fmt.Errorf("wal: corrupt entry in %s: %v", path, err)
	}
	r.lastIndex = index
	if !r.keepEntries || index <= r.start.Index {
		// Most of a long log is before the snapshot, and read-only passes
		// keep nothing: only the position is needed, not a decoded entry.
		return nil
	}
	offset := index - r.start.Index - 1
	if offset > uint64(len(r.ents)) {
		return fmt.Errorf("%w in %s: snapshot[Index: %d, Term: %d], entry[Index: %d, Term: %d], %d entries read",
			ErrSliceOutOfRange, path, r.start.Index, r.start.Term, index, term, len(r.ents))
	}
	e := &raftpb.Entry{}
	if err := proto.Unmarshal(data, e); err != nil {
		return fmt.Errorf("wal: corrupt entry in %s: %v", path, err)
	}
	r.ents = append(r.ents[:offset], e)
	return nil
}

// entryPosition reads the term and index of a marshalled raftpb.Entry
// without decoding it, still checking that every field is well formed.
func entryPosition(data []byte) (term, index uint64, err error) {
	const (
		fieldTerm  = 2
		fieldIndex = 3
	)
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return 0, 0, protowire.ParseError(n)
		}
		data = data[n:]
		if typ == protowire.VarintType && (num == fieldTerm || num == fieldIndex) {
			var v uint64
			v, n = protowire.ConsumeVarint(data)
			if num == fieldTerm {
				term = v
			} else {
				index = v
			}
		} else {
			n = protowire.ConsumeFieldValue(num, typ, data)
		}
		if n < 0 {
			return 0, 0, protowire.ParseError(n)
		}
		data = data[n:]
	}
	return term, index, nil
}

func (r *replay) snapshot(data []byte, path string) error {
	var snap walpb.Snapshot
	if err := snap.Unmarshal(data); err != nil {
		return fmt.Errorf("wal: corrupt snapshot record in %s: %v", path, err)
	}
	r.snaps = append(r.snaps, snap)
	r.lastIndex = max(r.lastIndex, snap.Index)
	if snap.Index == r.start.Index {
		if snap.Term != r.start.Term {
			return fmt.Errorf("%w in %s: index %d has term %d, want %d", ErrSnapshotMismatch, path, snap.Index, snap.Term, r.start.Term)
		}
		r.matched = true
	}
	return nil
}

// ReadAll replays the log from the snapshot given to Open and returns the
// metadata, the last HardState and the entries after the snapshot. A torn
// last frame is the normal end of a log that crashed mid-append: in a WAL
// opened for appending it is wiped so that new records follow the last
// good one. If the snapshot was never recorded the data is returned together
// with ErrSnapshotNotFound. ReadAll may be called only once.
func (w *WAL) ReadAll() (metadata []byte, state *raftpb.HardState, ents []*raftpb.Entry, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.decoder == nil {
		return nil, &raftpb.HardState{}, nil, ErrDecoderNotFound
	}
	r := newReplay(w.start, true)
	err = r.run(w.decoder)
	if isTornTail(err) {
		if cut := checkNotCutShort(w.decoder, r.lastIndex); cut != nil {
			return nil, &raftpb.HardState{}, nil, cut
		}
		if w.tail() != nil {
			w.lg.Warn("discarding torn record at the end of the WAL", zap.Error(err))
		}
	}
	if err != io.EOF && !isTornTail(err) {
		return nil, &raftpb.HardState{}, nil, err
	}
	if err := w.finishRead(r); err != nil {
		return nil, &raftpb.HardState{}, nil, err
	}
	if !r.matched {
		return r.metadata, r.state, r.ents, ErrSnapshotNotFound
	}
	return r.metadata, r.state, r.ents, nil
}

// checkNotCutShort tells a torn tail that a crash can leave from a segment
// file that was cut: a frame running past the end of a file smaller than a
// preallocated segment. lastIndex is the last index read before the damage.
func checkNotCutShort(d *decoder, lastIndex uint64) error {
	if !d.cutShort || d.tailSize() >= SegmentSizeBytes {
		return nil
	}
	return fmt.Errorf("%w: %s is %d bytes, less than the %d a segment is preallocated to, and ends inside the record at offset %d, after index %d: the records after that point are lost",
		ErrSegmentCutShort, d.path(), d.tailSize(), SegmentSizeBytes, d.lastValidOff, lastIndex)
}

// finishRead ends the read phase: a read-only WAL closes its files, a WAL
// open for appending wipes the tail after the last good frame and starts an
// encoder there that continues the CRC chain.
func (w *WAL) finishRead(r *replay) error {
	d := w.decoder
	w.decoder = nil
	w.start = walpb.Snapshot{}
	w.metadata = r.metadata
	w.state = r.state
	w.enti = r.lastIndex
	if w.closeReaders != nil {
		w.closeReaders()
		w.closeReaders = nil
	}
	tail := w.tail()
	if tail == nil {
		return nil
	}
	if _, err := tail.file.Seek(d.lastValidOff, io.SeekStart); err != nil {
		return err
	}
	if err := fileutil.ZeroToEnd(tail.file.File); err != nil {
		return err
	}
	w.encoder = newEncoder(tail.file.File, d.lastValidOff, d.crc)
	return nil
}

// ValidSnapshotEntries returns the snapshot records in the WAL in dir whose
// index is at or below the commit index of the last HardState: the
// snapshots a restart may safely begin from. It reads without locking.
func ValidSnapshotEntries(lg *zap.Logger, dir string) ([]walpb.Snapshot, error) {
	if lg == nil {
		lg = zap.NewNop()
	}
	names, err := readWALNames(lg, dir)
	if err != nil {
		return nil, err
	}
	if err := checkSeq(names); err != nil {
		return nil, err
	}
	r, err := replayReadOnly(dir, names, walpb.Snapshot{})
	if err != nil {
		return nil, err
	}
	var valid []walpb.Snapshot
	for _, s := range r.snaps {
		if s.Index <= r.state.GetCommit() {
			valid = append(valid, s)
		}
	}
	return valid, nil
}

// Verify reads the WAL in dir from snap without locking it and checks the
// CRC chain, the metadata and that snap is recorded. It returns the last
// HardState.
func Verify(lg *zap.Logger, dir string, snap walpb.Snapshot) (*raftpb.HardState, error) {
	if lg == nil {
		lg = zap.NewNop()
	}
	names, from, err := selectWALFiles(lg, dir, snap.Index)
	if err != nil {
		return nil, err
	}
	r, err := replayReadOnly(dir, names[from:], snap)
	if err != nil {
		return nil, err
	}
	if !r.matched {
		return nil, ErrSnapshotNotFound
	}
	return r.state, nil
}

// replayReadOnly replays names without keeping entries; a torn last frame
// ends the replay quietly.
func replayReadOnly(dir string, names []string, start walpb.Snapshot) (*replay, error) {
	readers, closeAll, err := openReaders(dir, names)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	r := newReplay(start, false)
	if err := r.run(newDecoder(readers...)); !errors.Is(err, io.EOF) && !isTornTail(err) {
		return nil, err
	}
	return r, nil
}

// ReadMetadata returns the metadata recorded at the start of the oldest
// segment in dir, without replaying the log: enough to name the member in
// an error about a log that cannot be replayed.
func ReadMetadata(dir string) ([]byte, error) {
	names, err := readWALNames(zap.NewNop(), dir)
	if err != nil {
		return nil, err
	}
	readers, closeAll, err := openReaders(dir, names[:1])
	if err != nil {
		return nil, err
	}
	defer closeAll()
	d := newDecoder(readers...)
	var rec walpb.Record
	for {
		if err := d.decode(&rec); err != nil {
			return nil, err
		}
		if rec.Type == metadataType {
			return rec.Data, nil
		}
	}
}
