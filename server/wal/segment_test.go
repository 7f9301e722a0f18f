package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnkv/cairn/pkg/fileutil"
	"github.com/cairnkv/cairn/server/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// recordsOf decodes one segment on its own.
func recordsOf(t *testing.T, path string) []walpb.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := newSegmentReader(f, path)
	if err != nil {
		t.Fatal(err)
	}
	d := newDecoder(r)
	var recs []walpb.Record
	for {
		var rec walpb.Record
		err := d.decode(&rec)
		if err == io.EOF {
			return recs
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
}

func TestSegmentCutOver(t *testing.T) {
	withSegmentSize(t, 4096)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, []byte("md"))
	all := entries(1, 60, 1, 200)
	for i, e := range all {
		mustSave(t, w, hardState(1, 1, uint64(i+1)), []*raftpb.Entry{e})
	}
	mustClose(t, w)

	names, err := readWALNames(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 3 {
		t.Fatalf("only %d segments: %v", len(names), names)
	}
	var prevLast walpb.Record
	for i, name := range names {
		seq, index, err := parseWALName(name)
		if err != nil || seq != uint64(i) {
			t.Fatalf("segment %d has name %s", i, name)
		}
		recs := recordsOf(t, filepath.Join(dir, name))
		if recs[0].Type != crcType || recs[1].Type != metadataType || string(recs[1].Data) != "md" {
			t.Fatalf("%s does not start with crc and metadata: %+v", name, recs[:2])
		}
		if i == 0 {
			prevLast = recs[len(recs)-1]
			continue
		}
		if recs[0].Crc != prevLast.Crc {
			t.Fatalf("%s starts with crc %x, previous segment ended with %x", name, recs[0].Crc, prevLast.Crc)
		}
		if recs[2].Type != stateType {
			t.Fatalf("%s: third record has type %d, want a HardState", name, recs[2].Type)
		}
		// The first entry in the segment is the one its name announces.
		for _, r := range recs {
			if r.Type == entryType {
				e := mustEntry(t, r.Data)
				if e.GetIndex() != index {
					t.Fatalf("%s: first entry %d", name, e.GetIndex())
				}
				break
			}
		}
		prevLast = recs[len(recs)-1]
	}
	for _, tmp := range []string{"spare-0.tmp", "spare-1.tmp", "spare-2.tmp"} {
		if _, err := os.Stat(filepath.Join(dir, tmp)); err == nil {
			t.Fatalf("spare segment file %s left after Close", tmp)
		}
	}
	w, _, st, got := readAllAt(t, dir, walpb.Snapshot{})
	defer mustClose(t, w)
	checkEntries(t, got, all)
	if st.GetCommit() != 60 {
		t.Fatalf("commit %d", st.GetCommit())
	}
}

func mustEntry(t *testing.T, data []byte) *raftpb.Entry {
	t.Helper()
	e := &raftpb.Entry{}
	if err := proto.Unmarshal(data, e); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestReleaseLockToAndPurge(t *testing.T) {
	withSegmentSize(t, 4096)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	defer mustClose(t, w)
	for i, e := range entries(1, 60, 1, 200) {
		mustSave(t, w, hardState(1, 1, uint64(i+1)), []*raftpb.Entry{e})
	}
	names, _ := readWALNames(nil, dir)
	// Nothing is released yet: purge must keep every segment.
	if removed, err := fileutil.PurgeOnce(nil, dir, walSuffix, 1); err != nil || len(removed) != 0 {
		t.Fatalf("purged locked files %v (%v)", removed, err)
	}
	// Release up to the first index of the third segment: segments 0 and 1
	// hold only older entries... but segment 1 may hold entries below it, so
	// only segment 0 is released.
	_, third, _ := parseWALName(names[2])
	if err := w.ReleaseLockTo(third); err != nil {
		t.Fatal(err)
	}
	removed, err := fileutil.PurgeOnce(nil, dir, walSuffix, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || filepath.Base(removed[0]) != names[0] {
		t.Fatalf("removed %v, want only %s", removed, names[0])
	}
	// Releasing beyond the last index keeps the tail locked.
	if err := w.ReleaseLockTo(1 << 40); err != nil {
		t.Fatal(err)
	}
	if _, err := fileutil.PurgeOnce(nil, dir, walSuffix, 1); err != nil {
		t.Fatal(err)
	}
	left, _ := readWALNames(nil, dir)
	if len(left) != 1 || left[0] != names[len(names)-1] {
		t.Fatalf("left %v, want the tail %s", left, names[len(names)-1])
	}
	mustSave(t, w, hardState(1, 1, 61), entries(61, 1, 1, 10))
}

// tornTailCase damages the last frame of the last segment from each of the
// offsets cuts returns.
type tornTailCase struct {
	name   string
	cuts   func(frameStart, frameEnd int64) []int64
	damage func(path string, cut int64) error
}

var tornTailCases = []tornTailCase{
	{"zeroed sectors", sectorBoundaries, func(path string, cut int64) error {
		// The sectors from cut on never reached the disk and still read as
		// zeros, as in a preallocated file.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteAt(make([]byte, 4096), cut)
		return err
	}},
}

func everyByte(start, end int64) []int64 {
	var cuts []int64
	for c := start; c < end; c++ {
		cuts = append(cuts, c)
	}
	return cuts
}

// sectorBoundaries returns the frame start and every sector boundary inside
// the frame: a disk loses whole sectors, never parts of one.
func sectorBoundaries(start, end int64) []int64 {
	cuts := []int64{start}
	for c := (start/minSectorSize + 1) * minSectorSize; c < end; c += minSectorSize {
		cuts = append(cuts, c)
	}
	return cuts
}

func TestTornTailIsRepairedOnOpen(t *testing.T) {
	withSegmentSize(t, 16*1024)
	src := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, src, nil)
	mustSave(t, w, hardState(1, 1, 3), entries(1, 3, 1, 100))
	frameStart := w.encoder.end()
	mustSave(t, w, nil, entries(4, 1, 1, 700)) // spans two sectors
	frameEnd := w.encoder.end()
	mustClose(t, w)

	for _, tc := range tornTailCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, cut := range tc.cuts(frameStart, frameEnd) {
				dir := filepath.Join(t.TempDir(), "wal")
				copyDir(t, src, dir)
				if err := tc.damage(filepath.Join(dir, walName(0, 0)), cut); err != nil {
					t.Fatal(err)
				}
				w, _, st, got := readAllAt(t, dir, walpb.Snapshot{})
				checkEntries(t, got, entries(1, 3, 1, 100))
				if st.GetCommit() != 3 {
					t.Fatalf("cut %d: commit %d", cut, st.GetCommit())
				}
				mustSave(t, w, hardState(1, 1, 4), entries(4, 1, 2, 5))
				mustClose(t, w)

				w, _, _, got = readAllAt(t, dir, walpb.Snapshot{})
				checkEntries(t, got, append(entries(1, 3, 1, 100), entries(4, 1, 2, 5)...))
				mustClose(t, w)
			}
		})
	}
}

// TestCutShortSegmentIsRefused cuts the last segment inside its last frame:
// no crash leaves a preallocated file shorter, so the records after the cut
// may have been acknowledged and ReadAll must refuse instead of repairing.
func TestCutShortSegmentIsRefused(t *testing.T) {
	withSegmentSize(t, 16*1024)
	src := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, src, nil)
	mustSave(t, w, hardState(1, 1, 3), entries(1, 3, 1, 100))
	frameStart := w.encoder.end()
	mustSave(t, w, nil, entries(4, 1, 1, 700))
	frameEnd := w.encoder.end()
	mustClose(t, w)

	for _, cut := range everyByte(frameStart+1, frameEnd) {
		dir := filepath.Join(t.TempDir(), "wal")
		copyDir(t, src, dir)
		path := filepath.Join(dir, walName(0, 0))
		if err := os.Truncate(path, cut); err != nil {
			t.Fatal(err)
		}
		w, err := Open(nil, dir, walpb.Snapshot{})
		if err != nil {
			t.Fatal(err)
		}
		_, _, _, err = w.ReadAll()
		mustClose(t, w)
		if !errors.Is(err, ErrSegmentCutShort) {
			t.Fatalf("cut at %d: ReadAll = %v, want ErrSegmentCutShort", cut, err)
		}
		want := fmt.Sprintf("wal: last segment was cut short: %s is %d bytes, less than the 16384 a segment is preallocated to, and ends inside the record at offset %d, after index 3: the records after that point are lost", path, cut, frameStart)
		if err.Error() != want {
			t.Fatalf("cut at %d: error %q\nwant %q", cut, err, want)
		}
		if b, _ := os.ReadFile(path); int64(len(b)) != cut {
			t.Fatalf("cut at %d: refused ReadAll changed the file to %d bytes", cut, len(b))
		}
	}
}

func TestRepair(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	mustSave(t, w, hardState(1, 1, 2), entries(1, 2, 1, 100))
	good := w.encoder.end()
	mustSave(t, w, nil, entries(3, 1, 1, 100))
	mustClose(t, w)
	path := filepath.Join(dir, walName(0, 0))
	if err := os.Truncate(path, good+20); err != nil {
		t.Fatal(err)
	}
	if !Repair(nil, dir) {
		t.Fatal("Repair failed")
	}
	if st, err := os.Stat(path); err != nil || st.Size() != good {
		t.Fatalf("repaired size %v, want %d (%v)", st.Size(), good, err)
	}
	if _, err := os.Stat(path + ".broken"); err != nil {
		t.Fatal("no .broken copy")
	}
	if !Repair(nil, dir) {
		t.Fatal("Repair of a clean file failed")
	}
	w, _, _, got := readAllAt(t, dir, walpb.Snapshot{})
	defer mustClose(t, w)
	checkEntries(t, got, entries(1, 2, 1, 100))
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	names, err := fileutil.ReadDirNames(src, walSuffix)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
