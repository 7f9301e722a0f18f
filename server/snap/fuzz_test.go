package snap

import (
	"bytes"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/fuzztest"
	"github.com/cairnkv/cairn/server/snap/snappb"
)

// isDecodeError reports whether err is one a damaged snap file may give:
// etcd's empty and CRC errors, or a malformed envelope or snapshot.
func isDecodeError(err error) bool {
	msg := err.Error()
	return errors.Is(err, ErrEmptySnapshot) || errors.Is(err, ErrCRCMismatch) ||
		strings.HasPrefix(msg, "snappb: ") || strings.HasPrefix(msg, "proto:")
}

// FuzzSnapRead loads arbitrary bytes as the only snap file of a directory.
// Load must return the snapshot decodeSnapFile finds, or ErrNoSnapshot with
// the file set aside as *.broken when it finds an error of a damaged file.
func FuzzSnapRead(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		want, decodeErr := decodeSnapFile(data)
		if decodeErr != nil && !isDecodeError(decodeErr) {
			t.Fatalf("unexpected error %q", decodeErr)
		}
		dir := fuzztest.ScratchDir(t)
		path := filepath.Join(dir, "0000000000000001-0000000000000001.snap")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := New(nil, dir).Load()
		if decodeErr != nil {
			if !errors.Is(err, ErrNoSnapshot) {
				t.Fatalf("Load of a damaged file: %v, %v", got, err)
			}
			if _, err := os.Stat(path + ".broken"); err != nil {
				t.Fatalf("damaged file not set aside: %v", err)
			}
			return
		}
		if err != nil || !proto.Equal(got, want) {
			t.Fatalf("Load = %v, %v; decoded %v", got, err, want)
		}
		checkResave(t, want)
	})
}

// checkResave saves a decoded snapshot again and reads it back: what cairn
// accepted it must be able to write.
func checkResave(t *testing.T, snap *raftpb.Snapshot) {
	t.Helper()
	data, err := proto.Marshal(snap)
	if err != nil {
		t.Fatalf("a decoded snapshot does not marshal: %v", err)
	}
	if len(data) == 0 {
		return // nothing to checksum: decoding it is ErrEmptySnapshot by design
	}
	env := snappb.Snapshot{Crc: crc32.Update(0, crcTable, data), Data: data}
	if env.Crc == 0 {
		return // a CRC of 0 reads as "no CRC", as in etcd
	}
	again, err := decodeSnapFile(env.Marshal())
	if err != nil || !proto.Equal(again, snap) {
		t.Fatalf("re-encoded snapshot decodes to %v, %v", again, err)
	}
}

// FuzzSnapRoundTrip saves a snapshot built from the arguments and reads the
// file back.
func FuzzSnapRoundTrip(f *testing.F) {
	f.Fuzz(func(t *testing.T, term, index uint64, data []byte, voters []byte) {
		snap := &raftpb.Snapshot{
			Data: data,
			Metadata: &raftpb.SnapshotMetadata{
				Term: proto.Uint64(term), Index: proto.Uint64(index),
				ConfState: &raftpb.ConfState{Voters: idsOf(voters)},
			},
		}
		dir := fuzztest.ScratchDir(t)
		if err := New(nil, dir).SaveSnap(snap); err != nil {
			t.Fatal(err)
		}
		got, err := New(nil, dir).Load()
		if index == 0 {
			// etcd does not write an empty snapshot.
			if !errors.Is(err, ErrNoSnapshot) {
				t.Fatalf("Load after saving an empty snapshot: %v, %v", got, err)
			}
			return
		}
		if err != nil || !proto.Equal(got, snap) {
			t.Fatalf("Load = %v, %v; saved %v", got, err, snap)
		}
	})
}

func idsOf(b []byte) []uint64 {
	var ids []uint64
	for _, v := range b {
		ids = append(ids, uint64(v))
	}
	return ids
}

// TestFuzzSeeds keeps the committed seed corpora equal to what they are
// generated from: snap files as SaveSnap writes them, and damaged copies.
// Regenerate with CAIRN_WRITE_FUZZ_SEEDS=1 go test -run TestFuzzSeeds.
func TestFuzzSeeds(t *testing.T) {
	dir := t.TempDir()
	s := New(nil, dir)
	mustSave(t, s, testSnap(2, 0x49425))
	file, err := os.ReadFile(filepath.Join(dir, "0000000000000002-0000000000049425.snap"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeSnapFile(file); err != nil {
		t.Fatalf("seed file does not decode: %v", err)
	}
	damaged := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(file)) }
	envelope := func(crc uint32, data []byte) []byte { return (&snappb.Snapshot{Crc: crc, Data: data}).Marshal() }
	fuzztest.Check(t, "FuzzSnapRead", []fuzztest.Seed{
		{Name: "snap-file", Args: []any{file}},
		{Name: "empty-file", Args: []any{[]byte{}}},
		{Name: "crc-mismatch", Args: []any{damaged(func(b []byte) []byte { b[len(b)-3] ^= 0xff; return b })}},
		{Name: "truncated", Args: []any{file[:len(file)/2]}},
		{Name: "zero-crc", Args: []any{envelope(0, []byte("data"))}},
		{Name: "no-data", Args: []any{envelope(7, nil)}},
		{Name: "data-not-a-snapshot", Args: []any{envelope(crc32.Update(0, crcTable, []byte{0xff, 0xff}), []byte{0xff, 0xff})}},
	})
	fuzztest.Check(t, "FuzzSnapRoundTrip", []fuzztest.Seed{
		{Name: "three-voters", Args: []any{uint64(2), uint64(0x49425), []byte("store"), []byte{1, 2, 3}}},
		{Name: "empty-index", Args: []any{uint64(1), uint64(0), []byte("x"), []byte{}}},
		{Name: "no-data", Args: []any{uint64(5), uint64(9), []byte{}, []byte{1}}},
	})
}
