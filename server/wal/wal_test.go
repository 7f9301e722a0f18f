package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/server/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// withSegmentSize lowers SegmentSizeBytes for one test.
func withSegmentSize(t testing.TB, n int64) {
	old := SegmentSizeBytes
	SegmentSizeBytes = n
	t.Cleanup(func() { SegmentSizeBytes = old })
}

func entries(from, n, term uint64, size int) []*raftpb.Entry {
	var ents []*raftpb.Entry
	for i := from; i < from+n; i++ {
		data := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		ents = append(ents, &raftpb.Entry{Index: proto.Uint64(i), Term: proto.Uint64(term), Data: data})
	}
	return ents
}

func hardState(term, vote, commit uint64) *raftpb.HardState {
	return &raftpb.HardState{Term: proto.Uint64(term), Vote: proto.Uint64(vote), Commit: proto.Uint64(commit)}
}

func mustCreate(t testing.TB, dir string, metadata []byte) *WAL {
	t.Helper()
	w, err := Create(nil, dir, metadata)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func mustSave(t testing.TB, w *WAL, st *raftpb.HardState, ents []*raftpb.Entry) {
	t.Helper()
	if err := w.Save(st, ents); err != nil {
		t.Fatal(err)
	}
}

func mustClose(t testing.TB, w *WAL) {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// readAllAt opens dir at snap, reads it and keeps it open for appending.
func readAllAt(t *testing.T, dir string, snap walpb.Snapshot) (*WAL, []byte, *raftpb.HardState, []*raftpb.Entry) {
	t.Helper()
	w, err := Open(nil, dir, snap)
	if err != nil {
		t.Fatal(err)
	}
	md, st, ents, err := w.ReadAll()
	if err != nil {
		w.Close()
		t.Fatal(err)
	}
	return w, md, st, ents
}

func checkEntries(t *testing.T, got, want []*raftpb.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d", len(got), len(want))
	}
	for i := range got {
		if !proto.Equal(got[i], want[i]) {
			t.Fatalf("entry %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

// frame builds the expected bytes of one frame from the format description.
func frame(typ int64, crc uint32, data []byte) []byte {
	var rec []byte
	rec = protowire.AppendTag(rec, 1, protowire.VarintType)
	rec = protowire.AppendVarint(rec, uint64(typ))
	rec = protowire.AppendTag(rec, 2, protowire.VarintType)
	rec = protowire.AppendVarint(rec, uint64(crc))
	if data != nil {
		rec = protowire.AppendTag(rec, 3, protowire.BytesType)
		rec = protowire.AppendBytes(rec, data)
	}
	pad := (8 - len(rec)%8) % 8
	word := uint64(len(rec))
	if pad > 0 {
		word |= uint64(0x80|pad) << 56
	}
	out := binary.LittleEndian.AppendUint64(nil, word)
	out = append(out, rec...)
	return append(out, make([]byte, pad)...)
}

func TestCreateWritesEtcdLayout(t *testing.T) {
	withSegmentSize(t, 16*1024)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, []byte("abc"))
	mustClose(t, w)

	got, err := os.ReadFile(filepath.Join(dir, "0000000000000000-0000000000000000.wal"))
	if err != nil {
		t.Fatal(err)
	}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	mdCrc := crc32.Update(0, castagnoli, []byte("abc"))
	emptySnap := []byte{0x08, 0x00, 0x10, 0x00}
	var want []byte
	want = append(want, frame(crcType, 0, nil)...)
	want = append(want, frame(metadataType, mdCrc, []byte("abc"))...)
	want = append(want, frame(snapshotType, crc32.Update(mdCrc, castagnoli, emptySnap), emptySnap)...)
	// The crc frame is fixed: length 4 with 4 bytes of padding.
	if first := []byte{4, 0, 0, 0, 0, 0, 0, 0x84, 0x08, 0x04, 0x10, 0x00, 0, 0, 0, 0}; !bytes.Equal(want[:16], first) {
		t.Fatalf("test helper is wrong: % x", want[:16])
	}
	if !bytes.Equal(got[:len(want)], want) {
		t.Fatalf("head:\n got % x\nwant % x", got[:len(want)], want)
	}
	if int64(len(got)) != SegmentSizeBytes {
		t.Fatalf("file size %d, want preallocated %d", len(got), SegmentSizeBytes)
	}
	if bytes.ContainsFunc(got[len(want):], func(r rune) bool { return r != 0 }) {
		t.Fatal("preallocated tail is not zero")
	}
	if Exist(dir+".tmp") || !Exist(dir) {
		t.Fatal("temporary directory left behind or WAL missing")
	}
}

func TestCreateRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(nil, dir, nil); !errors.Is(err, os.ErrExist) {
		t.Fatalf("got %v, want ErrExist", err)
	}
}

func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, []byte("metadata"))
	ents := entries(1, 10, 1, 100)
	mustSave(t, w, hardState(1, 2, 5), ents[:5])
	mustSave(t, w, hardState(1, 2, 9), ents[5:])
	mustClose(t, w)

	w, md, st, got := readAllAt(t, dir, walpb.Snapshot{})
	defer mustClose(t, w)
	if string(md) != "metadata" {
		t.Fatalf("metadata %q", md)
	}
	if !proto.Equal(st, hardState(1, 2, 9)) {
		t.Fatalf("state %v", st)
	}
	checkEntries(t, got, ents)
}

func TestOverwrittenEntries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	mustSave(t, w, hardState(1, 1, 2), entries(1, 5, 1, 10))
	// A new leader in term 2 replaces 3..5 with a shorter tail.
	mustSave(t, w, hardState(2, 1, 2), entries(3, 1, 2, 20))
	mustClose(t, w)

	w, _, _, got := readAllAt(t, dir, walpb.Snapshot{})
	defer mustClose(t, w)
	want := append(entries(1, 2, 1, 10), entries(3, 1, 2, 20)...)
	checkEntries(t, got, want)
}

func TestSaveSnapshotReplay(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	cs := &raftpb.ConfState{Voters: []uint64{1}}
	mustSave(t, w, hardState(1, 1, 10), entries(1, 10, 1, 10))
	if err := w.SaveSnapshot(walpb.Snapshot{Index: 5, Term: 1, ConfState: cs}); err != nil {
		t.Fatal(err)
	}
	if err := w.SaveSnapshot(walpb.Snapshot{Index: 6, Term: 1}); err == nil {
		t.Fatal("snapshot without ConfState accepted")
	}
	mustSave(t, w, hardState(1, 1, 10), entries(11, 2, 1, 10))
	mustClose(t, w)

	w, _, _, got := readAllAt(t, dir, walpb.Snapshot{Index: 5, Term: 1})
	checkEntries(t, got, entries(6, 7, 1, 10))
	mustClose(t, w)

	tests := []struct {
		name string
		snap walpb.Snapshot
		want error
	}{
		{"not recorded", walpb.Snapshot{Index: 7, Term: 1}, ErrSnapshotNotFound},
		{"term mismatch", walpb.Snapshot{Index: 5, Term: 2}, ErrSnapshotMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Open(nil, dir, tt.snap)
			if err != nil {
				t.Fatal(err)
			}
			defer mustClose(t, w)
			if _, _, _, err := w.ReadAll(); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}

	snaps, err := ValidSnapshotEntries(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 2 || snaps[1].Index != 5 || !proto.Equal(snaps[1].ConfState, cs) {
		t.Fatalf("valid snapshots %+v", snaps)
	}
	st, err := Verify(nil, dir, walpb.Snapshot{Index: 5, Term: 1})
	if err != nil || st.GetCommit() != 10 {
		t.Fatalf("Verify: %v, %v", st, err)
	}
}

func TestOpenIsExclusive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	defer mustClose(t, w)
	if _, err := Open(nil, dir, walpb.Snapshot{}); err == nil {
		t.Fatal("second Open succeeded while the WAL is locked")
	}
	r, err := OpenForRead(nil, dir, walpb.Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, r)
	if _, _, _, err := r.ReadAll(); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(hardState(1, 1, 1), nil); !errors.Is(err, ErrNotWritable) {
		t.Fatalf("Save on read-only WAL: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(nil, t.TempDir(), walpb.Snapshot{}); !errors.Is(err, ErrFileNotFound) {
		t.Fatalf("empty dir: %v", err)
	}
}

func TestCRCMismatchNamesFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	mustSave(t, w, hardState(1, 1, 1), entries(1, 3, 1, 64))
	mustSave(t, w, hardState(1, 1, 3), entries(4, 3, 1, 64))
	mustClose(t, w)

	path := filepath.Join(dir, walName(0, 0))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, bytes.Repeat([]byte{'c'}, 64)) // data of entry 2
	b[i+32] ^= 0x01
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, write := range []bool{true, false} {
		var w *WAL
		if write {
			w, err = Open(nil, dir, walpb.Snapshot{})
		} else {
			w, err = OpenForRead(nil, dir, walpb.Snapshot{})
		}
		if err != nil {
			t.Fatal(err)
		}
		_, _, _, err = w.ReadAll()
		mustClose(t, w)
		if !errors.Is(err, ErrCRCMismatch) || !strings.Contains(err.Error(), path) {
			t.Fatalf("write=%v: got %v, want crc mismatch naming %s", write, err, path)
		}
	}
	if _, err := Verify(nil, dir, walpb.Snapshot{}); !errors.Is(err, ErrCRCMismatch) {
		t.Fatalf("Verify: %v", err)
	}
}

func TestUnexpectedRecordTypeNamesFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	w.mu.Lock()
	err := w.encoder.encode(&walpb.Record{Type: 9, Data: []byte("x")})
	w.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	mustClose(t, w)
	w, err = Open(nil, dir, walpb.Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, w)
	if _, _, _, err := w.ReadAll(); err == nil || !strings.Contains(err.Error(), "unexpected record type 9") || !strings.Contains(err.Error(), walName(0, 0)) {
		t.Fatalf("got %v", err)
	}
}

func TestReadAllTwice(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	mustClose(t, mustCreate(t, dir, nil))
	w, _, _, _ := readAllAt(t, dir, walpb.Snapshot{})
	defer mustClose(t, w)
	if _, _, _, err := w.ReadAll(); !errors.Is(err, ErrDecoderNotFound) {
		t.Fatalf("got %v", err)
	}
}

func ExampleWAL() {
	dir, _ := os.MkdirTemp("", "wal-example")
	defer os.RemoveAll(dir)
	w, _ := Create(nil, filepath.Join(dir, "wal"), []byte("member-1"))
	_ = w.Save(hardState(1, 1, 1), entries(1, 1, 1, 3))
	w.Close()

	w, _ = Open(nil, filepath.Join(dir, "wal"), walpb.Snapshot{})
	md, st, ents, _ := w.ReadAll()
	w.Close()
	fmt.Println(string(md), st.GetCommit(), len(ents))
	// Output: member-1 1 1
}

func TestMetadataConflict(t *testing.T) {
	withSegmentSize(t, 4096)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, []byte("a"))
	w.mu.Lock()
	w.metadata = []byte("b") // the next segment will carry other metadata
	w.mu.Unlock()
	for i, e := range entries(1, 30, 1, 200) {
		mustSave(t, w, hardState(1, 1, uint64(i+1)), []*raftpb.Entry{e})
	}
	mustClose(t, w)
	w, err := Open(nil, dir, walpb.Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, w)
	if _, _, _, err := w.ReadAll(); !errors.Is(err, ErrMetadataConflict) {
		t.Fatalf("got %v, want ErrMetadataConflict", err)
	}
}
