package snap

import (
	"bytes"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/server/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func testSnap(term, index uint64) *raftpb.Snapshot {
	return &raftpb.Snapshot{
		Data: []byte("store"),
		Metadata: &raftpb.SnapshotMetadata{
			Term: proto.Uint64(term), Index: proto.Uint64(index),
			ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}},
		},
	}
}

func mustSave(t *testing.T, s *Snapshotter, snap *raftpb.Snapshot) {
	t.Helper()
	if err := s.SaveSnap(snap); err != nil {
		t.Fatal(err)
	}
}

func TestSaveSnapFormat(t *testing.T) {
	dir := t.TempDir()
	s := New(nil, dir)
	snap := testSnap(2, 0x49425)
	mustSave(t, s, snap)

	got, err := os.ReadFile(filepath.Join(dir, "0000000000000002-0000000000049425.snap"))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := proto.Marshal(snap)
	want := protowire.AppendTag(nil, 1, protowire.VarintType)
	want = protowire.AppendVarint(want, uint64(crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))))
	want = protowire.AppendTag(want, 2, protowire.BytesType)
	want = protowire.AppendBytes(want, data)
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x\nwant % x", got, want)
	}
	loaded, err := s.Load()
	if err != nil || !proto.Equal(loaded, snap) {
		t.Fatalf("Load: %v, %v", loaded, err)
	}
}

func TestSaveSnapSkipsEmpty(t *testing.T) {
	dir := t.TempDir()
	s := New(nil, dir)
	mustSave(t, s, &raftpb.Snapshot{})
	if _, err := s.Load(); !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("got %v, want ErrNoSnapshot", err)
	}
}

func TestLoadNewestAndBroken(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(path string) error
		wantErr error
	}{
		{"crc mismatch", func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)-3] ^= 0xff
			return os.WriteFile(p, b, 0o600)
		}, ErrCRCMismatch},
		{"empty file", func(p string) error { return os.WriteFile(p, nil, 0o600) }, ErrEmptySnapshot},
		{"garbage", func(p string) error { return os.WriteFile(p, []byte{0xff, 0xff}, 0o600) }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := New(nil, dir)
			mustSave(t, s, testSnap(1, 10))
			mustSave(t, s, testSnap(2, 20))
			newest := filepath.Join(dir, "0000000000000002-0000000000000014.snap")
			if err := tt.damage(newest); err != nil {
				t.Fatal(err)
			}
			if _, err := Read(newest); err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("Read: %v, want %v", err, tt.wantErr)
			}
			got, err := s.Load()
			if err != nil || got.GetMetadata().GetIndex() != 10 {
				t.Fatalf("Load: %v, %v", got, err)
			}
			if _, err := os.Stat(newest + ".broken"); err != nil {
				t.Fatal("broken file was not renamed")
			}
			if _, err := os.Stat(newest); !os.IsNotExist(err) {
				t.Fatal("broken file still in place")
			}
		})
	}
}

func TestLoadNewestAvailable(t *testing.T) {
	dir := t.TempDir()
	s := New(nil, dir)
	for _, i := range []uint64{5, 10, 15} {
		mustSave(t, s, testSnap(1, i))
	}
	got, err := s.LoadNewestAvailable([]walpb.Snapshot{{Index: 0}, {Index: 5, Term: 1}, {Index: 10, Term: 1}})
	if err != nil || got.GetMetadata().GetIndex() != 10 {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := s.LoadNewestAvailable([]walpb.Snapshot{{Index: 10, Term: 2}}); !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("got %v, want ErrNoSnapshot", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "0000000000000001-000000000000000f.snap")); err != nil {
		t.Fatal("a valid but unmatched snapshot must not be renamed")
	}
}

func TestLoadRemovesOrphanedDefragFiles(t *testing.T) {
	dir := t.TempDir()
	s := New(nil, dir)
	orphan := filepath.Join(dir, "db.tmp.071677638")
	if err := os.WriteFile(orphan, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(); !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatal("orphan not removed")
	}
}

func TestSaveDBFrom(t *testing.T) {
	dir := t.TempDir()
	s := New(nil, dir)
	if _, err := s.DBFilePath(0x7a178); !errors.Is(err, ErrNoDBSnapshot) {
		t.Fatalf("got %v", err)
	}
	n, err := s.SaveDBFrom(strings.NewReader("database"), 0x7a178)
	if err != nil || n != 8 {
		t.Fatalf("SaveDBFrom: %d, %v", n, err)
	}
	path, err := s.DBFilePath(0x7a178)
	if err != nil || filepath.Base(path) != "000000000007a178.snap.db" {
		t.Fatalf("DBFilePath: %s, %v", path, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "database" {
		t.Fatalf("content %q", b)
	}
	// A failing reader leaves no file behind.
	if _, err := s.SaveDBFrom(failingReader{}, 1); err == nil {
		t.Fatal("expected error")
	}
	names, _ := os.ReadDir(dir)
	if len(names) != 1 {
		t.Fatalf("files left: %v", names)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
