package utl

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/membership"
	"github.com/cairnkv/cairn/server/snap"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
	"github.com/cairnkv/cairn/server/wal"
	"github.com/cairnkv/cairn/server/wal/walpb"
)

// makeDB writes a db with n keys (the last one deleted) and returns its path.
func makeDB(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db")
	b, err := backend.Open(backend.Config{Path: path, MmapSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	st := mvcc.New(nil, b, mvcc.StoreConfig{})
	for i := range n {
		st.Put([]byte(fmt.Sprintf("k%d", i)), []byte("v"), 0)
	}
	st.DeleteRange([]byte(fmt.Sprintf("k%d", n-1)), nil)
	tx := b.BatchTx()
	tx.Lock()
	membership.Save(tx, &membership.Member{ID: 0xdead, PeerURLs: []string{"http://old:1"}})
	membership.Remove(tx, 0xbeef)
	tx.Unlock()
	st.Close()
	b.Commit()
	b.Close()
	return path
}

// withHash returns a copy of db with its sha256 appended, as
// Maintenance.Snapshot sends it.
func withHash(t *testing.T, db string) string {
	t.Helper()
	data, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	p := db + ".snapshot"
	if err := os.WriteFile(p, append(data, sum[:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func restoreConfig(t *testing.T, file string) RestoreConfig {
	return RestoreConfig{
		SnapshotPath: file, Name: "a", DataDir: filepath.Join(t.TempDir(), "data"),
		PeerURLs: []string{"http://127.0.0.1:1"}, InitialCluster: "a=http://127.0.0.1:1,b=http://127.0.0.1:2",
		InitialClusterToken: "tok", InitialMmapSize: 1 << 20,
	}
}

func TestSnapshotStatusCountsLiveKeys(t *testing.T) {
	st, err := SnapshotStatus(withHash(t, makeDB(t, 5)))
	if err != nil {
		t.Fatal(err)
	}
	if st.Revision != 7 || st.TotalKey != 4 || st.Hash == 0 || st.TotalSize == 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestRestoreWritesNewCluster(t *testing.T) {
	cfg := restoreConfig(t, withHash(t, makeDB(t, 5)))
	if err := Restore(cfg); err != nil {
		t.Fatal(err)
	}
	a := membership.ComputeMemberID([]string{"http://127.0.0.1:1"}, "tok", nil)
	b := membership.ComputeMemberID([]string{"http://127.0.0.1:2"}, "tok", nil)
	checkRestoredDB(t, BackendPath(cfg.DataDir), []uint64{a, b})
	checkRestoredWAL(t, filepath.Join(cfg.DataDir, "member", "wal"), a, membership.ComputeClusterID([]uint64{a, b}))
	s, err := snap.Read(filepath.Join(cfg.DataDir, "member", "snap", "0000000000000001-0000000000000002.snap"))
	if err != nil || s.GetMetadata().GetIndex() != 2 || len(s.GetMetadata().GetConfState().GetVoters()) != 2 {
		t.Fatalf("snap %v %v", s, err)
	}
}

func checkRestoredDB(t *testing.T, path string, ids []uint64) {
	t.Helper()
	be, err := backend.Open(backend.Config{Path: path, MmapSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	tx := be.ReadTx()
	tx.RLock()
	defer tx.RUnlock()
	ms, _ := membership.Load(tx)
	removed, _ := membership.LoadRemoved(tx)
	ci, _ := backend.ReadUint64(tx, backend.BucketMeta, backend.MetaConsistentIndex)
	term, _ := backend.ReadUint64(tx, backend.BucketMeta, backend.MetaTerm)
	if len(ms) != 2 || len(removed) != 0 || ci != 2 || term != 1 {
		t.Fatalf("members %v removed %v ci %d term %d", ms, removed, ci, term)
	}
	for i, m := range ms {
		if m.ID != min(ids[0], ids[1]) && i == 0 {
			t.Fatalf("members %v", ms)
		}
	}
}

func checkRestoredWAL(t *testing.T, dir string, self, cid uint64) {
	t.Helper()
	snaps, err := wal.ValidSnapshotEntries(nil, dir)
	if err != nil || len(snaps) != 2 || snaps[1].Index != 2 {
		t.Fatalf("wal snapshots %v %v", snaps, err)
	}
	w, err := wal.OpenForRead(nil, dir, walpb.Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	md, hs, ents, err := w.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var m pb.Metadata
	if err := proto.Unmarshal(md, &m); err != nil || m.GetNodeID() != self || m.GetClusterID() != cid {
		t.Fatalf("metadata %v %v", &m, err)
	}
	if len(ents) != 2 || hs.GetCommit() != 2 || hs.GetTerm() != 1 {
		t.Fatalf("hardstate %v, %d entries", hs, len(ents))
	}
}

func TestRestoreChecksHash(t *testing.T) {
	db := makeDB(t, 3)
	snapPath := withHash(t, db)
	data, _ := os.ReadFile(snapPath)
	data[100] ^= 0xff
	if err := os.WriteFile(snapPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Restore(restoreConfig(t, snapPath)); err == nil || !strings.HasPrefix(err.Error(), "expected sha256 [") {
		t.Fatalf("corrupted snapshot: %v", err)
	}
	if err := Restore(restoreConfig(t, db)); err == nil || err.Error() != "snapshot missing hash but --skip-hash-check=false" {
		t.Fatalf("db without hash: %v", err)
	}
	cfg := restoreConfig(t, db)
	cfg.SkipHashCheck = true
	if err := Restore(cfg); err != nil {
		t.Fatalf("db without hash, --skip-hash-check: %v", err)
	}
}

func TestRestoreBumpsRevision(t *testing.T) {
	cfg := restoreConfig(t, withHash(t, makeDB(t, 3)))
	cfg.RevisionBump, cfg.MarkCompacted = 100, true
	if err := Restore(cfg); err != nil {
		t.Fatal(err)
	}
	st, err := SnapshotStatus(BackendPath(cfg.DataDir))
	if err != nil || st.Revision != 105 {
		t.Fatalf("status %+v %v", st, err)
	}
	h, err := HashKVFile(BackendPath(cfg.DataDir), 0, 0)
	if err != nil || h.HashRevision != 105 || h.CompactRevision != 105 {
		t.Fatalf("hashkv %+v %v", h, err)
	}
}

func TestRestoreRefusesUsedDirs(t *testing.T) {
	cfg := restoreConfig(t, withHash(t, makeDB(t, 2)))
	if err := Restore(cfg); err != nil {
		t.Fatal(err)
	}
	if err := Restore(cfg); err == nil || !strings.Contains(err.Error(), "not empty or could not be read") {
		t.Fatalf("second restore: %v", err)
	}
	cfg.MarkCompacted = true
	if err := Restore(cfg); err != errBumpWithoutCompact {
		t.Fatalf("mark without bump: %v", err)
	}
}

func TestDefragKeepsData(t *testing.T) {
	dir := t.TempDir()
	db := makeDB(t, 50)
	if err := os.MkdirAll(filepath.Join(dir, "member", "snap"), 0o700); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(db)
	os.WriteFile(BackendPath(dir), data, 0o600)
	before, _ := SnapshotStatus(BackendPath(dir))
	if err := Defrag(dir, 0); err != nil {
		t.Fatal(err)
	}
	after, err := SnapshotStatus(BackendPath(dir))
	if err != nil || after.Hash != before.Hash || after.Revision != before.Revision {
		t.Fatalf("before %+v after %+v %v", before, after, err)
	}
}

func TestMainExitCodes(t *testing.T) {
	snapPath := withHash(t, makeDB(t, 2))
	cases := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"snapshot", "status"}, exitBadArgs, "Error: snapshot status requires exactly one argument\n"},
		{[]string{"snapshot", "status", snapPath, "-w", "xml"}, exitBadFeature, "Error: unsupported output format\n"},
		{[]string{"snapshot", "status", snapPath, "-w", "protobuf"}, exitBadFeature, "Error: protobuf not supported as output format\n"},
		{[]string{"snap", "status", snapPath}, exitOK, ""},
		{[]string{"snapshot", "restore", snapPath, "--bump-revision", "3"}, exitBadArgs, "Error: --mark-compacted required if --revision-bump > 0\n"},
		{[]string{"nope"}, exitGeneric, ""},
		{[]string{"version"}, exitOK, ""},
	}
	for _, c := range cases {
		var out, errb strings.Builder
		code := Main(c.args, &out, &errb)
		if code != c.code || (c.err != "" && errb.String() != c.err) {
			t.Errorf("%v: exit %d stderr %q; want %d %q", c.args, code, errb.String(), c.code, c.err)
		}
	}
}
