// Package wal owns the write-ahead log: the raft entries, HardStates and
// snapshot markers a member persists before it acknowledges anything, in
// etcd v3.7's on-disk format, so that a data directory moves freely between
// etcd and cairn.
//
// A WAL directory holds segments named "%016x-%016x.wal" (sequence number,
// first raft index). A segment is a sequence of frames: an 8-byte
// little-endian length word, a walpb.Record, and zero padding to 8-byte
// alignment. Each record's Crc is the CRC-32C (Castagnoli) rolling over the
// Data of every record since the WAL was created. A segment starts with a
// crc record carrying the CRC so far and a metadata record; the first
// segment then holds an empty snapshot record, later ones the HardState
// current when they were cut.
//
// Lifecycle: Create a new log, or Open one at a snapshot and ReadAll it
// (which is required before appending); then Save and SaveSnapshot; Close.
// The WAL never interprets entries: replay order, overwrites of entries with
// the same index and the CRC chain are its whole business.
package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cairnkv/cairn/pkg/fileutil"
	"github.com/cairnkv/cairn/pkg/syncgap"
	"github.com/cairnkv/cairn/server/metrics"
	"github.com/cairnkv/cairn/server/wal/walpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// Record types, as numbered by etcd.
const (
	metadataType int64 = iota + 1
	entryType
	stateType
	crcType
	snapshotType
)

// warnSyncDuration is how long an fdatasync may take before it is logged.
const warnSyncDuration = time.Second

// SegmentSizeBytes is the size at which a segment is cut and the size new
// segments are preallocated to. Tests may lower it.
var SegmentSizeBytes int64 = 64 * 1000 * 1000

var (
	// ErrMetadataConflict: two segments carry different metadata.
	ErrMetadataConflict = errors.New("wal: conflicting metadata found")
	// ErrFileNotFound: the directory has no segment, or none covering the
	// requested snapshot index.
	ErrFileNotFound = errors.New("wal: file not found")
	// ErrCRCMismatch: a record's checksum does not match the data before it.
	ErrCRCMismatch = errors.New("wal: crc mismatch")
	// ErrSnapshotMismatch: the log has a snapshot at the requested index but
	// with another term.
	ErrSnapshotMismatch = errors.New("wal: snapshot mismatch")
	// ErrSnapshotNotFound: the log holds no snapshot record matching the one
	// given to Open.
	ErrSnapshotNotFound = errors.New("wal: snapshot not found")
	// ErrSliceOutOfRange: an entry's index leaves a gap after the entries read so far.
	ErrSliceOutOfRange = errors.New("wal: slice bounds out of range")
	// ErrDecoderNotFound: ReadAll was called twice, or on a WAL from Create.
	ErrDecoderNotFound = errors.New("wal: decoder not found")
	// ErrNotWritable: Save before ReadAll, or on a WAL from OpenForRead.
	ErrNotWritable = errors.New("wal: not open for appending")
	// ErrSegmentCutShort: the last segment's file ends inside a record and
	// is shorter than a preallocated segment. A crash cannot do that (every
	// segment is preallocated, so an unfinished write reads as zeros): the
	// file was cut, and the records it lost may have been acknowledged.
	ErrSegmentCutShort = errors.New("wal: last segment was cut short")
	// ErrFailed: an earlier write, sync or segment cut failed. What it
	// wrote may be lost even if a retry seemed to work (after a failed
	// fsync the kernel may have dropped the dirty pages), so the WAL takes
	// no more records: the member must stop and replay from disk.
	ErrFailed = errors.New("wal: an earlier write to the log failed; it accepts no more records")
	// ErrUnexpectedEOF is wrapped by the error for a torn last frame. ReadAll
	// and Verify treat such a frame as the end of the log, so callers only
	// meet it from tools that decode segments themselves.
	ErrUnexpectedEOF = io.ErrUnexpectedEOF
)

// segment is one locked segment file of a WAL open for appending.
type segment struct {
	file       *fileutil.LockedFile
	seq, index uint64
}

// WAL is a write-ahead log open either for reading then appending (Create,
// Open) or for reading only (OpenForRead). It is safe for concurrent use.
type WAL struct {
	lg  *zap.Logger
	dir string

	mu       sync.Mutex
	metadata []byte
	state    *raftpb.HardState // last HardState written
	enti     uint64            // index of the last entry written
	// entryBuf is reused to marshal each entry: the encoder copies the
	// bytes into its frame, so one entry's buffer serves the next.
	entryBuf []byte

	// Reading: set by Open until ReadAll finishes.
	start        walpb.Snapshot
	decoder      *decoder
	closeReaders func()

	// Appending.
	dirFile  *os.File   // the WAL directory, fsynced after renames
	segments []*segment // locked segments, oldest first; the last is the tail
	encoder  *encoder
	spares   *spareSegments // the next segment files, made ahead

	unsafeNoSync bool // --unsafe-no-fsync: write but never fdatasync
	// syncs hears of every fdatasync of appended records, so that the
	// member's bulk writers can sync in the gaps (see pkg/syncgap).
	syncs *syncgap.Gaps

	// failed is the first error of a write, sync or cut; once set every
	// later append or sync fails with ErrFailed (see there).
	failed error
}

// checkUsable returns the error for appending to w: not open for appending,
// or failed before.
func (w *WAL) checkUsable() error {
	if w.failed != nil {
		return fmt.Errorf("%w (first failure: %v)", ErrFailed, w.failed)
	}
	if w.encoder == nil {
		return ErrNotWritable
	}
	return nil
}

// noteFailure remembers err, if any, as the WAL's first failure.
func (w *WAL) noteFailure(err error) error {
	if err != nil && w.failed == nil {
		w.failed = err
		w.lg.Error("WAL write failed; refusing further writes", zap.String("dir", w.dir), zap.Error(err))
	}
	return err
}

// SetUnsafeNoFsync makes the WAL skip fdatasync (--unsafe-no-fsync): an
// acknowledged write can then be lost in a power failure. For tests and
// benchmarks only.
func (w *WAL) SetUnsafeNoFsync() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.unsafeNoSync = true
}

// Create makes a new WAL in dir, which must not exist or be empty, and
// returns it ready for appending. The segment is built in dir+".tmp" and
// renamed, so a crash never leaves a half-initialised log behind.
func Create(lg *zap.Logger, dir string, metadata []byte) (*WAL, error) {
	if lg == nil {
		lg = zap.NewNop()
	}
	if err := checkCreatable(dir); err != nil {
		return nil, err
	}
	tmpdir := filepath.Clean(dir) + ".tmp"
	if err := os.RemoveAll(tmpdir); err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmpdir)
	if err := fileutil.CreateDirAll(tmpdir); err != nil {
		return nil, err
	}
	w, err := createFirstSegment(lg, dir, tmpdir, metadata)
	if err != nil {
		return nil, err
	}
	if err := w.moveInto(tmpdir, dir); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

func checkCreatable(dir string) error {
	names, err := fileutil.ReadDirNames(dir, "")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(names) != 0 {
		return fmt.Errorf("wal: cannot create in %s: %w (directory not empty)", dir, os.ErrExist)
	}
	return nil
}

// createFirstSegment writes crc(0), metadata and the empty snapshot record
// into a preallocated first segment in tmpdir.
func createFirstSegment(lg *zap.Logger, dir, tmpdir string, metadata []byte) (*WAL, error) {
	path := filepath.Join(tmpdir, walName(0, 0))
	f, err := fileutil.LockFile(path, os.O_WRONLY|os.O_CREATE, fileutil.PrivateFileMode)
	if err != nil {
		return nil, err
	}
	if err := disk.preallocate(f.File, SegmentSizeBytes); err != nil {
		f.Close()
		return nil, err
	}
	w := &WAL{lg: lg, dir: dir, metadata: metadata, state: &raftpb.HardState{}}
	w.segments = []*segment{{file: f}}
	w.encoder = newEncoder(f.File, 0, 0)
	if err := w.writeSegmentHeader(0); err != nil {
		f.Close()
		return nil, err
	}
	if err := w.SaveSnapshot(walpb.Snapshot{}); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// moveInto renames the finished tmpdir to dir and makes the rename durable.
func (w *WAL) moveInto(tmpdir, dir string) error {
	// The first segment's name must be durable before the directory
	// takes its final name: a power cut must not leave an empty WAL
	// directory, which would make the member start as a new one.
	if err := fileutil.FsyncDir(tmpdir); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil { // empty, checked by Create
		return err
	}
	if err := os.Rename(tmpdir, dir); err != nil {
		return err
	}
	df, err := fileutil.OpenDir(dir)
	if err != nil {
		return err
	}
	w.dirFile = df
	w.spares = newSpareSegments(w.lg, dir, SegmentSizeBytes)
	return fileutil.FsyncDir(filepath.Dir(dir))
}

// Open opens the WAL in dir for replay from snap, locking the segments from
// the one holding snap.Index on. After ReadAll the WAL appends to its last
// segment.
func Open(lg *zap.Logger, dir string, snap walpb.Snapshot) (*WAL, error) {
	return openAtIndex(lg, dir, snap, true)
}

// OpenForRead opens the WAL in dir for replay from snap without locking it,
// so it can be read while another process appends. It cannot append.
func OpenForRead(lg *zap.Logger, dir string, snap walpb.Snapshot) (*WAL, error) {
	return openAtIndex(lg, dir, snap, false)
}

func openAtIndex(lg *zap.Logger, dir string, snap walpb.Snapshot, write bool) (*WAL, error) {
	if lg == nil {
		lg = zap.NewNop()
	}
	names, from, err := selectWALFiles(lg, dir, snap.Index)
	if err != nil {
		return nil, err
	}
	w := &WAL{lg: lg, dir: dir, start: snap, state: &raftpb.HardState{}}
	if write {
		err = w.openForAppend(names[from:])
	} else {
		err = w.openReadOnly(names[from:])
	}
	if err != nil {
		return nil, err
	}
	return w, nil
}

// openForAppend locks and opens names read-write; the same descriptors
// serve the replay and the appends, so the locks are never dropped.
func (w *WAL) openForAppend(names []string) error {
	var readers []segmentReader
	for _, name := range names {
		path := filepath.Join(w.dir, name)
		f, err := fileutil.TryLockFile(path, os.O_RDWR, fileutil.PrivateFileMode)
		if err != nil {
			w.closeSegments()
			return fmt.Errorf("wal: cannot lock %s: %w", path, err)
		}
		seq, index, _ := parseWALName(name)
		w.segments = append(w.segments, &segment{file: f, seq: seq, index: index})
		r, err := newSegmentReader(f.File, path)
		if err != nil {
			w.closeSegments()
			return err
		}
		readers = append(readers, r)
	}
	df, err := fileutil.OpenDir(w.dir)
	if err != nil {
		w.closeSegments()
		return err
	}
	w.dirFile = df
	w.decoder = newDecoder(readers...)
	w.spares = newSpareSegments(w.lg, w.dir, SegmentSizeBytes)
	return nil
}

func (w *WAL) openReadOnly(names []string) error {
	readers, closeAll, err := openReaders(w.dir, names)
	if err != nil {
		return err
	}
	w.decoder = newDecoder(readers...)
	w.closeReaders = closeAll
	return nil
}

// openReaders opens names without locks and returns a function closing them.
func openReaders(dir string, names []string) ([]segmentReader, func(), error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	var readers []segmentReader
	for _, name := range names {
		path := filepath.Join(dir, name)
		f, err := os.Open(path)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		files = append(files, f)
		r, err := newSegmentReader(f, path)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		readers = append(readers, r)
	}
	return readers, closeAll, nil
}

// Save appends ents and then st (unless empty). It fsyncs when raft requires
// it (new entries, or a changed term or vote) and cuts a new segment once the
// tail has grown past SegmentSizeBytes.
func (w *WAL) Save(st *raftpb.HardState, ents []*raftpb.Entry) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkUsable(); err != nil {
		return err
	}
	if raft.IsEmptyHardState(st) && len(ents) == 0 {
		return nil
	}
	return w.noteFailure(w.save(st, ents))
}

func (w *WAL) save(st *raftpb.HardState, ents []*raftpb.Entry) error {
	mustSync := raft.MustSync(st, w.state, len(ents))
	start := time.Now()
	for _, e := range ents {
		if err := w.saveEntry(e); err != nil {
			return err
		}
	}
	if err := w.saveState(st); err != nil {
		return err
	}
	metrics.WALWriteSeconds.Observe(time.Since(start).Seconds())
	if w.encoder.end() < SegmentSizeBytes {
		if mustSync {
			return w.sync()
		}
		return nil
	}
	return w.cut()
}

// maxKeptEntryBuf bounds the marshal buffer kept between entries, so one
// huge entry does not pin its size for the WAL's lifetime.
const maxKeptEntryBuf = 1 << 20

func (w *WAL) saveEntry(e *raftpb.Entry) error {
	data, err := proto.MarshalOptions{}.MarshalAppend(w.entryBuf[:0], e)
	if err != nil {
		return err
	}
	if data == nil {
		data = []byte{} // as proto.Marshal gives: the record still carries Data
	}
	if cap(data) <= maxKeptEntryBuf {
		w.entryBuf = data[:0]
	}
	if err := w.encoder.encode(&walpb.Record{Type: entryType, Data: data}); err != nil {
		return err
	}
	w.enti = e.GetIndex()
	return nil
}

func (w *WAL) saveState(st *raftpb.HardState) error {
	if raft.IsEmptyHardState(st) {
		return nil
	}
	data, err := proto.Marshal(st)
	if err != nil {
		return err
	}
	w.state = proto.CloneOf(st)
	return w.encoder.encode(&walpb.Record{Type: stateType, Data: data})
}

// SaveSnapshot records that a snapshot was taken at snap and fsyncs. Every
// snapshot but the initial one must carry its ConfState.
func (w *WAL) SaveSnapshot(snap walpb.Snapshot) error {
	if snap.ConfState == nil && snap.Index > 0 {
		return fmt.Errorf("wal: snapshot at index %d is missing its ConfState", snap.Index)
	}
	data, err := snap.Marshal()
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkUsable(); err != nil {
		return err
	}
	if err := w.noteFailure(w.encoder.encode(&walpb.Record{Type: snapshotType, Data: data})); err != nil {
		return err
	}
	w.enti = max(w.enti, snap.Index)
	return w.noteFailure(w.sync())
}

// writeSegmentHeader writes the crc and metadata records that open a segment.
func (w *WAL) writeSegmentHeader(prevCrc uint32) error {
	if err := w.encoder.encode(&walpb.Record{Type: crcType, Crc: prevCrc}); err != nil {
		return err
	}
	return w.encoder.encode(&walpb.Record{Type: metadataType, Data: w.metadata})
}

func (w *WAL) tail() *segment {
	if len(w.segments) == 0 {
		return nil
	}
	return w.segments[len(w.segments)-1]
}

// cut closes the tail at its current size and continues in a new segment
// named after the next raft index.
func (w *WAL) cut() error {
	tail := w.tail()
	if err := w.encoder.flush(); err != nil {
		return err
	}
	// Drop the unused preallocated space of the finished segment.
	if err := disk.truncate(tail.file.File, w.encoder.end()); err != nil {
		return err
	}
	if err := w.sync(); err != nil {
		return err
	}
	f, err := w.spares.take()
	if err != nil {
		return err
	}
	next := &segment{file: f, seq: tail.seq + 1, index: w.enti + 1}
	w.segments = append(w.segments, next)
	w.encoder = newEncoder(f.File, 0, w.encoder.crc)
	if err := w.writeSegmentHeader(w.encoder.crc); err != nil {
		return err
	}
	if err := w.saveState(w.state); err != nil {
		return err
	}
	if err := w.sync(); err != nil {
		return err
	}
	path := filepath.Join(w.dir, walName(next.seq, next.index))
	if err := disk.rename(f.Name(), path); err != nil {
		return err
	}
	if err := disk.fsync(w.dirFile); err != nil {
		return err
	}
	w.lg.Info("created a new WAL segment", zap.String("path", path))
	return nil
}

// TailPath is the path of the segment appends go to ("" before ReadAll or
// on a read-only WAL), for messages about the end of the log.
func (w *WAL) TailPath() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.encoder == nil || w.tail() == nil {
		return ""
	}
	t := w.tail()
	return filepath.Join(w.dir, walName(t.seq, t.index))
}

// Sync makes every record saved so far durable, including a HardState
// whose Save did not need an fsync.
func (w *WAL) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkUsable(); err != nil {
		return err
	}
	return w.noteFailure(w.sync())
}

// sync writes out buffered frames and fdatasyncs the tail.
func (w *WAL) sync() error {
	if err := w.encoder.flush(); err != nil {
		return err
	}
	if w.unsafeNoSync {
		return nil
	}
	start := time.Now()
	tail := w.tail()
	w.syncs.Begin()
	err := disk.fdatasync(tail.file.File)
	w.syncs.End()
	if err != nil {
		err = fmt.Errorf("wal: fdatasync %s: %w", filepath.Join(w.dir, walName(tail.seq, tail.index)), err)
	}
	took := time.Since(start)
	metrics.WALFsyncSeconds.Observe(took.Seconds())
	if took > warnSyncDuration {
		w.lg.Warn("slow fdatasync", zap.Duration("took", took), zap.Duration("expected-duration", warnSyncDuration))
	}
	return err
}

// ReportSyncsTo tells g of every later fdatasync of appended records.
func (w *WAL) ReportSyncsTo(g *syncgap.Gaps) {
	w.mu.Lock()
	w.syncs = g
	w.mu.Unlock()
}

// ReleaseLockTo unlocks the segments that hold only entries below index, so
// that a purge may remove them. The segment containing index stays locked,
// and so does the tail.
func (w *WAL) ReleaseLockTo(index uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	keepFrom := len(w.segments) - 1
	for i, s := range w.segments {
		if s.index >= index {
			keepFrom = i - 1 // segment i-1 may still hold entries below index
			break
		}
	}
	if keepFrom <= 0 {
		return nil
	}
	var firstErr error
	for _, s := range w.segments[:keepFrom] {
		if err := s.file.Close(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	w.segments = w.segments[keepFrom:]
	return firstErr
}

// Close syncs the tail (when appending), removes the spare segment file and
// releases every lock.
func (w *WAL) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if w.spares != nil {
		keep(w.spares.close())
		w.spares = nil
	}
	// After a failure a last sync could only pretend: what failed is
	// not known to be on disk whatever a new fsync says.
	if w.encoder != nil && w.tail() != nil && w.failed == nil {
		keep(w.sync())
	}
	w.encoder = nil
	if w.closeReaders != nil {
		w.closeReaders()
		w.closeReaders = nil
	}
	keep(w.closeSegments())
	if w.dirFile != nil {
		keep(w.dirFile.Close())
		w.dirFile = nil
	}
	return firstErr
}

func (w *WAL) closeSegments() error {
	var firstErr error
	for _, s := range w.segments {
		if err := s.file.Close(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	w.segments = nil
	return firstErr
}
