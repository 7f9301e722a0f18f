package etcdserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/wal"
	"github.com/cairnkv/cairn/server/wal/walpb"
)

// advice is the end of every refusal for the default member.
const advice = "; this member must not serve or vote with these files: " +
	"restore its data directory from a snapshot (cairnutl snapshot restore), " +
	"or remove it from the cluster (cairnctl member remove 8e9e05c52164694d) and add it back as a new member with an empty data directory"

// damagedMember writes puts into a member with small WAL segments, stops
// it and returns its config, its WAL segments (oldest first) and the index
// its backend has applied.
func damagedMember(t *testing.T, puts int, snapshotCount uint64) (*Config, []string, uint64) {
	t.Helper()
	old := wal.SegmentSizeBytes
	wal.SegmentSizeBytes = 8 * 1024
	t.Cleanup(func() { wal.SegmentSizeBytes = old })
	cfg := testConfig(t.TempDir())
	cfg.SnapshotCount, cfg.SnapshotCatchUpEntries = snapshotCount, 5
	s := startServer(t, cfg)
	for i := range puts {
		mustPut(t, s, fmt.Sprintf("key-%04d", i), strings.Repeat("v", 40))
	}
	applied := s.appliedIndex.Load()
	s.Stop()
	segs, err := filepath.Glob(filepath.Join(cfg.walDir(), "*.wal"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(segs)
	return cfg, segs, applied
}

// refusal starts a member on cfg and returns New's error, failing the test
// if the member opened.
func refusal(t *testing.T, cfg *Config) error {
	t.Helper()
	s, err := New(cfg)
	if err == nil {
		s.Stop()
		t.Fatal("the member opened its damaged data directory")
	}
	if !errors.Is(err, ErrInconsistentStorage) {
		t.Fatalf("error %v does not wrap ErrInconsistentStorage", err)
	}
	return err
}

func TestRefusesBackendAheadOfWAL(t *testing.T) {
	cfg, segs, applied := damagedMember(t, 300, 0)
	if len(segs) < 3 {
		t.Fatalf("only %d WAL segments", len(segs))
	}
	// Losing whole last segments leaves a clean end of log, well before
	// what the backend applied.
	last := segs[len(segs)-1]
	must(t, os.Remove(last))
	tail := segs[len(segs)-2]
	walLast := firstIndexOf(t, last) - 1

	err := refusal(t, cfg)
	want := fmt.Sprintf("inconsistent storage, refusing to start: the backend %s has applied entries up to index %d "+
		"but the WAL in %s (last segment %s) ends at index %d: entries %d to %d are missing from the WAL",
		cfg.backendPath(), applied, cfg.walDir(), filepath.Base(tail), walLast, walLast+1, applied) + advice
	if err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
}

func TestRefusesBackendWithoutWAL(t *testing.T) {
	cfg, _, applied := damagedMember(t, 20, 0)
	must(t, os.RemoveAll(cfg.walDir()))

	err := refusal(t, cfg)
	want := fmt.Sprintf("inconsistent storage, refusing to start: the backend %s has applied entries up to index %d "+
		"but the WAL in %s ends at index 1: entries 2 to %d are missing from the WAL",
		cfg.backendPath(), applied, cfg.walDir(), applied) + advice
	if err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
}

// TestRefusesCutLastSegment is the reproduction: the last segment
// cut in the middle, which looks like a torn tail but is not one.
func TestRefusesCutLastSegment(t *testing.T) {
	cfg, segs, _ := damagedMember(t, 300, 0)
	last := segs[len(segs)-1]
	used := usedBytes(t, last)
	cut := used/2&^7 + 3 // frames are 8-byte aligned: this is inside one
	must(t, os.Truncate(last, cut))

	msg := refusal(t, cfg).Error()
	want := fmt.Sprintf("inconsistent storage, refusing to start: the WAL in %s cannot be replayed: "+
		"read wal: wal: last segment was cut short: %s is %d bytes, less than the 8192 a segment is preallocated to, and ends inside the record at offset ",
		cfg.walDir(), last, cut)
	if !strings.HasPrefix(msg, want) || !strings.HasSuffix(msg, "the records after that point are lost"+advice) {
		t.Fatalf("error:\n%s\nwant prefix:\n%s", msg, want)
	}
}

func TestRefusesWALHoles(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, segs []string) string // returns the expected WAL error
	}{
		{"missing middle segment", func(t *testing.T, segs []string) string {
			must(t, os.Remove(segs[1]))
			return fmt.Sprintf("wal: file sequence numbers (starting from %s) do not increase continuously: %[2]s follows %[1]s", filepath.Base(segs[0]), filepath.Base(segs[2]))
		}},
		{"torn record in a middle segment", func(t *testing.T, segs []string) string {
			used := usedBytes(t, segs[1])
			must(t, os.Truncate(segs[1], used-3))
			return "wal: truncated frame"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, segs, _ := damagedMember(t, 300, 0)
			if len(segs) < 3 {
				t.Fatalf("only %d WAL segments", len(segs))
			}
			walErr := tt.damage(t, segs)
			msg := refusal(t, cfg).Error()
			want := fmt.Sprintf("inconsistent storage, refusing to start: the WAL in %s cannot be replayed: ", cfg.walDir())
			if !strings.HasPrefix(msg, want) || !strings.Contains(msg, walErr) || !strings.HasSuffix(msg, advice) {
				t.Fatalf("error:\n%s\nwant %q ... %q ... advice", msg, want, walErr)
			}
		})
	}
}

func TestRefusesMissingSnapshotFile(t *testing.T) {
	cfg, _, _ := damagedMember(t, 120, 20)
	snaps, err := filepath.Glob(filepath.Join(cfg.snapDir(), "*.snap"))
	if err != nil || len(snaps) == 0 {
		t.Fatalf("no .snap files: %v", err)
	}
	sort.Strings(snaps)
	newest := snaps[len(snaps)-1]
	var term, index uint64
	if _, err := fmt.Sscanf(filepath.Base(newest), "%016x-%016x.snap", &term, &index); err != nil {
		t.Fatal(err)
	}
	must(t, os.Remove(newest))
	older := "no older snapshot file matches the WAL either"
	if len(snaps) > 1 {
		var oterm, oindex uint64
		fmt.Sscanf(filepath.Base(snaps[len(snaps)-2]), "%016x-%016x.snap", &oterm, &oindex)
		older = fmt.Sprintf("the newest readable one is at index %d", oindex)
	}

	err = refusal(t, cfg)
	want := fmt.Sprintf("inconsistent storage, refusing to start: the WAL in %s records a snapshot at index %d (term %d) "+
		"but its file %s is missing or unreadable (%s)", cfg.walDir(), index, term, newest, older) + advice
	if err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
}

func TestCheckCommitInWAL(t *testing.T) {
	w := walView{dir: "/d/member/wal", tailPath: "/d/member/wal/0000000000000001-0000000000000010.wal", lastIndex: 40}
	if err := checkCommitInWAL(1, w, &raftpb.HardState{Commit: proto.Uint64(40)}); err != nil {
		t.Fatalf("commit at the last index refused: %v", err)
	}
	err := checkCommitInWAL(0x1f, w, &raftpb.HardState{Commit: proto.Uint64(41)})
	want := "inconsistent storage, refusing to start: the WAL in /d/member/wal commits index 41 but its entries end at index 40 " +
		"(last segment /d/member/wal/0000000000000001-0000000000000010.wal)" +
		strings.Replace(advice, "8e9e05c52164694d", "1f", 1)
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
}

func TestCheckSnapshotPresentAcceptsNewestOrNone(t *testing.T) {
	snapAt := func(i uint64) *raftpb.Snapshot {
		return &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(i), Term: proto.Uint64(2)}}
	}
	walSnaps := []walpb.Snapshot{{}, {Index: 10, Term: 2}, {Index: 20, Term: 2}}
	if err := checkSnapshotPresent("s", "w", walSnaps, snapAt(20)); err != nil {
		t.Fatal(err)
	}
	if err := checkSnapshotPresent("s", "w", []walpb.Snapshot{{}}, nil); err != nil {
		t.Fatalf("a WAL that names no snapshot was refused: %v", err)
	}
	if err := checkSnapshotPresent("s", "w", walSnaps, snapAt(10)); err == nil {
		t.Fatal("an older snapshot than the WAL's newest was accepted")
	}
}

func firstIndexOf(t *testing.T, seg string) uint64 {
	t.Helper()
	var seq, index uint64
	if _, err := fmt.Sscanf(filepath.Base(seg), "%016x-%016x.wal", &seq, &index); err != nil {
		t.Fatal(err)
	}
	return index
}

// usedBytes is the length of seg without its trailing preallocated zeros.
func usedBytes(t *testing.T, seg string) int64 {
	t.Helper()
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(strings.TrimRight(string(b), "\x00")))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
