package etcdserver

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/server/compactor"
)

// compactedRev is the store's compacted revision as HashKV reports it.
func compactedRev(t *testing.T, s *Server) int64 {
	t.Helper()
	resp, err := s.maint.HashKV(testCtx(t), 0)
	if err != nil {
		t.Fatalf("HashKV: %v", err)
	}
	return resp.GetCompactRevision()
}

// A leader with periodic auto compaction compacts through raft to a
// revision written a retention ago. The retention is short so that the
// real clock gets there quickly; waitFor's bound is only against a hang.
func TestAutoCompactionPeriodic(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.AutoCompactionMode = compactor.ModePeriodic
	cfg.AutoCompactionRetention = 200 * time.Millisecond
	s := startServer(t, cfg)
	var last int64
	for i := range 5 {
		last = mustPut(t, s, fmt.Sprintf("k%d", i), "v").GetHeader().GetRevision()
	}
	waitFor(t, "auto compaction past the writes", func() bool { return compactedRev(t, s) >= last })
	_, err := s.KV().Range(testCtx(t), &pb.RangeRequest{Key: []byte("k0"), Revision: last - 1})
	if err == nil || err.Error() != "mvcc: required revision has been compacted" {
		t.Fatalf("Range at revision %d after auto compaction: %v, want the compacted error", last-1, err)
	}
}

// Auto compaction is off unless a retention is given; an unknown mode is
// refused when the member is created.
func TestAutoCompactionConfig(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.autoCompactor != nil {
		t.Error("a compactor was created without a retention")
	}
	s.Stop()
	cfg = testConfig(t.TempDir())
	cfg.AutoCompactionMode, cfg.AutoCompactionRetention = "hourly", time.Hour
	if s, err := New(cfg); err == nil {
		s.Stop()
		t.Fatal("New accepted auto compaction mode \"hourly\"")
	}
}

// fillAndFree writes n values of size bytes, deletes them and compacts
// physically, leaving the space they took free inside the db file.
func fillAndFree(t *testing.T, s *Server, n, size int) {
	t.Helper()
	for i := range n {
		mustPut(t, s, key(i), string(bytes.Repeat([]byte{'x'}, size)))
	}
	// Commit the values first: a commit writes only the newest state of a
	// key, so values deleted before any commit never take space in the file.
	s.commits.commit()
	ctx := testCtx(t)
	dr, err := s.KV().DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("key-"), RangeEnd: []byte("key.")})
	if err != nil || dr.GetDeleted() != int64(n) {
		t.Fatalf("DeleteRange = %v, %v; want %d deleted", dr, err, n)
	}
	if _, err := s.KV().Compact(ctx, &pb.CompactionRequest{Revision: dr.GetHeader().GetRevision(), Physical: true}); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	// Pages freed by a commit stay pending while the read view of that
	// commit is open; the next commit releases them.
	s.commits.commit()
	s.commits.commit()
}

// --bootstrap-defrag-threshold-megabytes defragments at start only when at
// least that much would be freed.
func TestBootstrapDefrag(t *testing.T) {
	tests := []struct {
		name       string
		thresholdM uint
		wantShrink bool
	}{
		{"off", 0, false},
		{"below threshold", 1024, false},
		{"above threshold", 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := startServer(t, testConfig(dir))
			fillAndFree(t, s, 300, 10*1024)
			before, inUse := s.stores.be.Size(), s.stores.be.SizeInUse()
			if before-inUse < 2<<20 {
				t.Fatalf("only %d bytes free after deleting 3 MB, test needs 2 MiB", before-inUse)
			}
			s.Stop()
			cfg := testConfig(dir)
			cfg.BootstrapDefragThresholdMegabytes = tc.thresholdM
			s = startServer(t, cfg)
			after := s.stores.be.Size()
			if shrunk := after < before; shrunk != tc.wantShrink {
				t.Errorf("db size %d -> %d after restart; want shrunk: %v", before, after, tc.wantShrink)
			}
		})
	}
}
