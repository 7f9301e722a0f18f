package utl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/wal"
)

// migrateDataDir makes a data dir whose db has storage version sv ("" for
// none, with v3.5's confState and term keys) and whose WAL holds reqs.
func migrateDataDir(t *testing.T, sv string, reqs ...*pb.InternalRaftRequest) string {
	t.Helper()
	dir := t.TempDir()
	snapDir := filepath.Join(dir, "member", "snap")
	if err := os.MkdirAll(snapDir, 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(snapDir, "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(backend.BucketMeta)
		if err != nil {
			return err
		}
		if sv != "" {
			meta.Put(backend.MetaStorageVersion, []byte(sv))
		}
		meta.Put(backend.MetaConfState, []byte(`{"voters":[1]}`))
		return meta.Put(backend.MetaTerm, []byte{0, 0, 0, 0, 0, 0, 0, 2})
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	w, err := wal.Create(nil, filepath.Join(dir, "member", "wal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ents []*raftpb.Entry
	for i, r := range reqs {
		data, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		ents = append(ents, &raftpb.Entry{Index: proto.Uint64(uint64(i + 1)), Term: proto.Uint64(2), Type: raftpb.EntryNormal.Enum(), Data: data})
	}
	if err := w.Save(&raftpb.HardState{Term: proto.Uint64(2), Commit: proto.Uint64(uint64(len(ents)))}, ents); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return dir
}

func storedVersion(t *testing.T, dir string) string {
	t.Helper()
	db, err := bolt.Open(BackendPath(dir), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v []byte
	db.View(func(tx *bolt.Tx) error {
		v = bytes.Clone(tx.Bucket(backend.BucketMeta).Get(backend.MetaStorageVersion))
		return nil
	})
	return string(v)
}

func TestMigrate(t *testing.T) {
	put := &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k"), Value: []byte("v")}}
	newer := &pb.InternalRaftRequest{DowngradeVersionTest: &pb.DowngradeVersionTestRequest{Ver: "3.7.0"}}
	tests := []struct {
		name     string
		from     string
		wal      []*pb.InternalRaftRequest
		target   wal.Version
		force    bool
		want     string // storage version afterwards
		wantErr  string
		wantLogs []string
	}{
		{name: "down one", from: "3.7.0", wal: []*pb.InternalRaftRequest{put}, target: wal.Version{Major: 3, Minor: 6}, want: "3.6.0", wantLogs: []string{"updated storage version"}},
		{name: "down to 3.5 clears", from: "3.7.0", target: wal.Version{Major: 3, Minor: 5}, want: "", wantLogs: []string{"updated storage version", "updated storage version"}},
		{name: "up from 3.5", from: "", target: wal.Version{Major: 3, Minor: 7}, want: "3.7.0"},
		{name: "up to date", from: "3.6.0", target: wal.Version{Major: 3, Minor: 6}, want: "3.6.0", wantLogs: []string{"storage version up-to-date"}},
		{name: "WAL holds newer entries", from: "3.7.0", wal: []*pb.InternalRaftRequest{put, newer}, target: wal.Version{Major: 3, Minor: 6}, want: "3.7.0",
			wantErr: "cannot downgrade storage, WAL contains newer entries, as the target version (3.6.0) is lower than the version (3.7.0) detected from WAL logs"},
		{name: "forced past newer entries", from: "3.7.0", wal: []*pb.InternalRaftRequest{newer}, target: wal.Version{Major: 3, Minor: 6}, force: true, want: "3.6.0",
			wantLogs: []string{"normal migrate failed, trying with force", "forcefully set storage version"}},
		{name: "unknown schema", from: "3.7.0", target: wal.Version{Major: 3, Minor: 8}, want: "3.7.0", wantErr: `cannot create migration plan: version "3.8.0" is not supported`},
		{name: "major change", from: "3.7.0", target: wal.Version{Major: 4, Minor: 0}, want: "3.7.0", wantErr: "cannot create migration plan: changing major storage version is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := migrateDataDir(t, tt.from, tt.wal...)
			core, logs := observer.New(zap.InfoLevel)
			err := Migrate(MigrateConfig{DataDir: dir, Target: tt.target, Force: tt.force, Logger: zap.New(core)})
			if (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
				t.Fatalf("Migrate: %v, want error %q", err, tt.wantErr)
			}
			if got := storedVersion(t, dir); got != tt.want {
				t.Fatalf("storage version %q, want %q", got, tt.want)
			}
			var msgs []string
			for _, e := range logs.All() {
				msgs = append(msgs, e.Message)
			}
			if tt.wantLogs != nil && strings.Join(msgs, "|") != strings.Join(tt.wantLogs, "|") {
				t.Fatalf("logs %q, want %q", msgs, tt.wantLogs)
			}
		})
	}
}

func TestParseTargetVersion(t *testing.T) {
	for in, want := range map[string]string{
		"3.6": "3.6.0", "3.5": "3.5.0", "4.1": "4.1.0",
		"":      `wrong target version format, expected "X.Y", got ""`,
		"3.6.1": `wrong target version format, expected "X.Y", got "3.6.1"`,
		"3.4":   `target version "3.4" not supported. Minimal "3.5"`,
		"x.y":   `failed to parse target version: strconv.ParseInt: parsing "x": invalid syntax`,
	} {
		v, err := parseTargetVersion(in)
		got := v.String()
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("parseTargetVersion(%q) = %q, want %q", in, got, want)
		}
	}
}
