package wal

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/pkg/fuzztest"
	"github.com/cairnkv/cairn/server/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
)

// decodedSegment is what the decoder made of one segment held in memory.
type decodedSegment struct {
	recs         []walpb.Record
	lastValidOff int64
	err          error // io.EOF, a torn-tail error, or corruption
}

func decodeBytes(data []byte) decodedSegment {
	seg := segmentReader{path: "fuzz.wal", size: int64(len(data)), r: bufio.NewReader(bytes.NewReader(data))}
	d := newDecoder(seg)
	var out decodedSegment
	for {
		var rec walpb.Record
		if err := d.decode(&rec); err != nil {
			out.lastValidOff, out.err = d.lastValidOff, err
			return out
		}
		out.recs = append(out.recs, rec)
	}
}

func sameRecords(a, b []walpb.Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Crc != b[i].Crc || !bytes.Equal(a[i].Data, b[i].Data) || (a[i].Data == nil) != (b[i].Data == nil) {
			return false
		}
	}
	return true
}

// checkDecoded holds for any bytes: the decoder ends cleanly, at a torn
// tail, or with an error that says it is the WAL's; it stops exactly after
// the last record it returned, so decoding only that prefix gives the same
// records and a clean end.
func checkDecoded(t *testing.T, data []byte, got decodedSegment) {
	t.Helper()
	if got.err != io.EOF && !isTornTail(got.err) && !strings.HasPrefix(got.err.Error(), "wal: ") {
		t.Fatalf("unclassified error %q", got.err)
	}
	if got.lastValidOff < 0 || got.lastValidOff > int64(len(data)) {
		t.Fatalf("last valid offset %d outside a segment of %d bytes", got.lastValidOff, len(data))
	}
	prefix := decodeBytes(data[:got.lastValidOff])
	if prefix.err != io.EOF || !sameRecords(prefix.recs, got.recs) {
		t.Fatalf("the prefix up to offset %d decodes to %d records (%v), the whole segment to %d records before %v",
			got.lastValidOff, len(prefix.recs), prefix.err, len(got.recs), got.err)
	}
}

// maxDecodeAlloc bounds what decoding n bytes may allocate: the buffered
// reader, the frames (at most n bytes) and their records, whatever a length
// field claims.
func maxDecodeAlloc(n int) uint64 { return 1<<20 + 4*uint64(n) }

// FuzzWALDecode feeds arbitrary bytes to the decoder as the last segment of
// a log.
func FuzzWALDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got := decodeBytes(data)
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > maxDecodeAlloc(len(data)) {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(data), n)
		}
		checkDecoded(t, data, got)
	})
}

// FuzzWALRepair writes arbitrary bytes as the only segment of a WAL
// directory, replays it read-only, and repairs it. Replay must not panic;
// Repair must succeed exactly when the decoder found a clean end or a torn
// tail, and leave a segment that decodes cleanly to the same records.
func FuzzWALRepair(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		want := decodeBytes(data)
		dir := fuzztest.ScratchDir(t)
		path := filepath.Join(dir, walName(0, 0))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		replayReadOnlyWAL(t, dir)

		repairable := want.err == io.EOF || isTornTail(want.err)
		if ok := Repair(nil, dir); ok != repairable {
			t.Fatalf("Repair = %v for a segment that ends with %v", ok, want.err)
		}
		if !repairable {
			return
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got := decodeBytes(after)
		if got.err != io.EOF || !sameRecords(got.recs, want.recs) {
			t.Fatalf("repaired segment decodes to %d records and %v, want %d records", len(got.recs), got.err, len(want.recs))
		}
		if isTornTail(want.err) {
			if int64(len(after)) != want.lastValidOff {
				t.Fatalf("repaired segment has %d bytes, want %d", len(after), want.lastValidOff)
			}
			if broken, err := os.ReadFile(path + ".broken"); err != nil || !bytes.Equal(broken, data) {
				t.Fatalf("the .broken copy differs from the damaged segment (%v)", err)
			}
		}
	})
}

// replayReadOnlyWAL replays dir from the empty snapshot. Any outcome but a
// panic or a hang is acceptable for arbitrary bytes.
func replayReadOnlyWAL(t *testing.T, dir string) {
	t.Helper()
	w, err := OpenForRead(nil, dir, walpb.Snapshot{})
	if err != nil {
		return
	}
	defer w.Close()
	_, _, _, _ = w.ReadAll()
}

// FuzzWALRoundTrip encodes records described by ops (see recordsFromOps),
// after the crc record a segment starts with, and decodes them back. It
// then cuts the segment at cut, as a crash during an append would: the cut
// segment must decode to the records wholly before the cut and then end
// cleanly or at a torn tail, never as corruption.
func FuzzWALRoundTrip(f *testing.F) {
	f.Fuzz(func(t *testing.T, prevCrc uint32, ops []byte, cut uint64) {
		recs := append([]walpb.Record{{Type: crcType, Crc: prevCrc}}, recordsFromOps(ops)...)
		data, ends := encodeRecords(t, prevCrc, recs)

		got := decodeBytes(data)
		if got.err != io.EOF || !sameRecords(got.recs, recs) {
			t.Fatalf("decoded %d records and %v, encoded %d", len(got.recs), got.err, len(recs))
		}
		at := int64(cut % uint64(len(data)+1))
		whole := 0
		for whole < len(ends) && ends[whole] <= at {
			whole++
		}
		torn := decodeBytes(data[:at])
		if torn.err != io.EOF && !isTornTail(torn.err) {
			t.Fatalf("segment cut at %d of %d: %v", at, len(data), torn.err)
		}
		if !sameRecords(torn.recs, recs[:whole]) {
			t.Fatalf("segment cut at %d decodes to %d records, want %d", at, len(torn.recs), whole)
		}
	})
}

// recordsFromOps turns fuzz bytes into records: each record takes a type
// byte and a length byte, then that many bytes of data (fewer at the end).
// A length of 0xff gives a record without data (nil), as crc records are.
func recordsFromOps(ops []byte) []walpb.Record {
	var recs []walpb.Record
	for len(ops) >= 2 {
		rec := walpb.Record{Type: int64(ops[0] % 8)}
		n := int(ops[1])
		ops = ops[2:]
		if n != 0xff {
			n = min(n, len(ops))
			rec.Data = bytes.Clone(ops[:n])
			ops = ops[n:]
		}
		recs = append(recs, rec)
	}
	return recs
}

// encodeRecords runs recs through an encoder continuing prevCrc, filling in
// their Crc, and returns the segment and the end offset of every frame.
func encodeRecords(t *testing.T, prevCrc uint32, recs []walpb.Record) ([]byte, []int64) {
	t.Helper()
	file, err := os.Create(filepath.Join(fuzztest.ScratchDir(t), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	e := newEncoder(file, 0, prevCrc)
	ends := make([]int64, len(recs))
	for i := range recs {
		if recs[i].Type == crcType {
			// A crc record restates the chain: the encoder must not fold
			// data into it.
			recs[i].Data = nil
		}
		if err := e.encode(&recs[i]); err != nil {
			t.Fatal(err)
		}
		ends[i] = e.end()
	}
	if err := e.flush(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file.Name())
	if err != nil {
		t.Fatal(err)
	}
	return data, ends
}

// TestDecodeHugeLengthField: a length word claiming far more bytes than
// the segment holds is a torn frame, not an allocation of that size.
func TestDecodeHugeLengthField(t *testing.T) {
	for _, lenField := range []uint64{1 << 40, 1<<56 - 1, 1<<63 | 1<<56 - 1, 1<<63 | 7<<56 | 1<<50} {
		data := binary.LittleEndian.AppendUint64(nil, lenField)
		data = append(data, make([]byte, 64)...)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got := decodeBytes(data)
		runtime.ReadMemStats(&after)
		if !isTornTail(got.err) || len(got.recs) != 0 {
			t.Errorf("length word %#x: %d records, %v; want a torn tail", lenField, len(got.recs), got.err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > maxDecodeAlloc(len(data)) {
			t.Errorf("length word %#x: allocated %d bytes", lenField, n)
		}
	}
}

// seedWAL writes a realistic log and returns its first segment, trimmed
// of the preallocated zeros after the last frame.
func seedWAL(t *testing.T) []byte {
	t.Helper()
	withSegmentSize(t, 64*1024)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, []byte("member metadata"))
	mustSave(t, w, hardState(1, 1, 0), entries(1, 3, 1, 40))
	if err := w.SaveSnapshot(walpb.Snapshot{Index: 2, Term: 1, ConfState: &raftpb.ConfState{Voters: []uint64{1}}}); err != nil {
		t.Fatal(err)
	}
	mustSave(t, w, hardState(2, 1, 3), entries(4, 2, 2, 700))
	end := w.encoder.end()
	mustClose(t, w)
	data, err := os.ReadFile(filepath.Join(dir, walName(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	return data[:end]
}

// TestFuzzSeeds keeps the committed seed corpora equal to what they are
// generated from: a real segment, damaged the ways crashes and disks damage
// them. Regenerate with CAIRN_WRITE_FUZZ_SEEDS=1 go test -run TestFuzzSeeds.
func TestFuzzSeeds(t *testing.T) {
	seg := seedWAL(t)
	last := decodeBytes(seg)
	if last.err != io.EOF || len(last.recs) < 8 {
		t.Fatalf("seed segment decodes to %d records and %v", len(last.recs), last.err)
	}
	starts := frameStarts(seg)
	lastFrame := starts[len(starts)-1]
	// bigFrame is the last frame that spans a sector boundary after its
	// header, where a torn write can leave a zero sector.
	bigFrame, boundary := lastSpanningFrame(starts, int64(len(seg)))
	damaged := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(seg)) }
	segments := []fuzztest.Seed{
		{Name: "empty", Args: []any{[]byte{}}},
		{Name: "segment", Args: []any{seg}},
		{Name: "preallocated-tail", Args: []any{append(bytes.Clone(seg), make([]byte, 64)...)}},
		{Name: "torn-mid-frame", Args: []any{seg[:bigFrame+300]}},
		{Name: "torn-header", Args: []any{seg[:lastFrame+5]}},
		{Name: "zeroed-sector", Args: []any{damaged(func(b []byte) []byte {
			clear(b[boundary:])
			return b
		})}},
		{Name: "flipped-data", Args: []any{damaged(func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b })}},
		{Name: "huge-length", Args: []any{damaged(func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[lastFrame:], 1<<50)
			return b
		})}},
	}
	fuzztest.Check(t, "FuzzWALDecode", segments)
	fuzztest.Check(t, "FuzzWALRepair", segments)

	entry := append([]byte{byte(entryType), 12}, "entry data 1"...)
	state := append([]byte{byte(stateType), 6}, 0x08, 0x02, 0x10, 0x01, 0x18, 0x05)
	fuzztest.Check(t, "FuzzWALRoundTrip", []fuzztest.Seed{
		{Name: "none", Args: []any{uint32(0), []byte{}, uint64(0)}},
		{Name: "entries-whole", Args: []any{uint32(0x1234abcd), bytes.Repeat(entry, 3), uint64(1 << 20)}},
		{Name: "entries-cut", Args: []any{uint32(7), append(bytes.Repeat(entry, 3), state...), uint64(41)}},
		{Name: "metadata-no-data", Args: []any{uint32(0), []byte{byte(metadataType), 0xff, byte(snapshotType), 0}, uint64(17)}},
	})
}

// frameStarts returns the offset of every frame of a well-formed segment.
func frameStarts(seg []byte) []int64 {
	var starts []int64
	for off := int64(0); off+frameHeaderBytes <= int64(len(seg)); {
		recBytes, padBytes := decodeFrameSize(binary.LittleEndian.Uint64(seg[off:]))
		if recBytes == 0 {
			break
		}
		starts = append(starts, off)
		off += frameHeaderBytes + recBytes + padBytes
	}
	return starts
}

// lastSpanningFrame returns the start of the last frame that crosses a
// sector boundary after its header, and that boundary.
func lastSpanningFrame(starts []int64, size int64) (start, boundary int64) {
	for i := len(starts) - 1; i >= 0; i-- {
		end := size
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		b := (starts[i]+frameHeaderBytes)/minSectorSize*minSectorSize + minSectorSize
		if b < end {
			return starts[i], b
		}
	}
	return 0, 0
}
