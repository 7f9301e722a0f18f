package etcdserver

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/server/errs"
)

func TestRequestTooLarge(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MaxRequestBytes = 1024
	s := startServer(t, cfg)
	tests := []struct {
		name    string
		valSize int
		wantErr error
	}{
		{"fits", 100, nil},
		{"just over", 1024, errs.ErrRequestTooLarge},
		{"far over", 64 << 10, errs.ErrRequestTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.Header().GetRevision()
			_, err := s.KV().Put(testCtx(t), &pb.PutRequest{Key: []byte("k"), Value: bytes.Repeat([]byte("x"), tt.valSize)})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Put = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil && s.Header().GetRevision() != before {
				t.Errorf("refused put changed the revision %d -> %d", before, s.Header().GetRevision())
			}
		})
	}
}

func hasNoSpace(alarms []*pb.AlarmMember, id uint64) bool {
	for _, a := range alarms {
		if a.GetAlarm() == pb.AlarmType_NOSPACE && a.GetMemberID() == id {
			return true
		}
	}
	return false
}

// TestNoSpace fills a tiny quota: the write is refused with ErrNoSpace and
// the NOSPACE alarm raised; deletes still work; DEACTIVATE disarms it.
func TestNoSpace(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.QuotaBackendBytes = 1 << 10 // below an empty backend's file size
	s := startServer(t, cfg)
	ctx := testCtx(t)

	if _, err := s.KV().Put(ctx, &pb.PutRequest{Key: []byte("k"), Value: []byte("v")}); !errors.Is(err, errs.ErrNoSpace) {
		t.Fatalf("Put over quota = %v, want %v", err, errs.ErrNoSpace)
	}
	if !hasNoSpace(s.Alarms(), s.ID()) {
		t.Fatalf("Alarms() = %v, want NOSPACE for %x", s.Alarms(), s.ID())
	}
	got, err := s.maint.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_GET})
	if err != nil || !hasNoSpace(got.GetAlarms(), s.ID()) {
		t.Fatalf("Alarm GET = %v, %v", got, err)
	}
	st, err := s.maint.Status(ctx)
	if err != nil || len(st.GetErrors()) == 0 {
		t.Errorf("Status errors = %v, %v; want the alarm", st.GetErrors(), err)
	}
	txn := &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("t"), Value: []byte("v")}}}}}
	if _, err := s.KV().Txn(ctx, txn); !errors.Is(err, errs.ErrNoSpace) {
		t.Errorf("Txn with a put under NOSPACE = %v, want %v", err, errs.ErrNoSpace)
	}
	// Freeing space stays possible.
	if _, err := s.KV().DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("k")}); err != nil {
		t.Errorf("DeleteRange under NOSPACE: %v", err)
	}
	if _, err := s.KV().Range(ctx, &pb.RangeRequest{Key: []byte("k")}); err != nil {
		t.Errorf("Range under NOSPACE: %v", err)
	}

	dis, err := s.maint.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_DEACTIVATE, MemberID: s.ID(), Alarm: pb.AlarmType_NOSPACE})
	if err != nil || !hasNoSpace(dis.GetAlarms(), s.ID()) {
		t.Fatalf("Alarm DEACTIVATE = %v, %v", dis, err)
	}
	if len(s.Alarms()) != 0 {
		t.Fatalf("Alarms() after DEACTIVATE = %v, want none", s.Alarms())
	}
}

func TestCompact(t *testing.T) {
	s := startServer(t, testConfig(t.TempDir()))
	var revs []int64
	for i := range 10 {
		revs = append(revs, mustPut(t, s, "k", strings.Repeat("v", i+1)).GetHeader().GetRevision())
	}
	cur := revs[len(revs)-1]
	tests := []struct {
		name     string
		rev      int64
		physical bool
		wantErr  error
	}{
		{"future", cur + 1, false, errs.ErrFutureRev},
		{"logical", revs[2], false, nil},
		{"physical", revs[5], true, nil},
		{"already compacted", revs[5], true, errs.ErrCompacted},
		{"older than compacted", revs[1], false, errs.ErrCompacted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			resp, err := s.KV().Compact(ctx, &pb.CompactionRequest{Revision: tt.rev, Physical: tt.physical})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Compact(%d) = %v, want %v", tt.rev, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if h := resp.GetHeader(); h.GetRevision() != cur || h.GetMemberId() != s.ID() {
				t.Errorf("header = %v", h)
			}
			if _, err := s.KV().Range(ctx, &pb.RangeRequest{Key: []byte("k"), Revision: tt.rev - 1}); !errors.Is(err, errs.ErrCompacted) {
				t.Errorf("Range below the compaction = %v, want %v", err, errs.ErrCompacted)
			}
			rr, err := s.KV().Range(ctx, &pb.RangeRequest{Key: []byte("k"), Revision: tt.rev})
			if err != nil || len(rr.GetKvs()) != 1 || rr.GetKvs()[0].GetModRevision() != tt.rev {
				t.Errorf("Range at the compaction = %v, %v", rr.GetKvs(), err)
			}
			hkv, err := s.maint.HashKV(ctx, 0)
			if err != nil || hkv.GetCompactRevision() != tt.rev {
				t.Errorf("HashKV compact revision = %d, %v; want %d", hkv.GetCompactRevision(), err, tt.rev)
			}
		})
	}
}

func TestDefragmentKeepsData(t *testing.T) {
	s := startServer(t, testConfig(t.TempDir()))
	writeHistory(t, s, 100)
	// Leave free pages behind so defrag has something to do.
	if _, err := s.KV().DeleteRange(testCtx(t), &pb.DeleteRangeRequest{Key: []byte(key(0)), RangeEnd: []byte(key(9))}); err != nil {
		t.Fatal(err)
	}
	want := readState(t, s)
	if err := s.maint.Defragment(testCtx(t)); err != nil {
		t.Fatalf("Defragment: %v", err)
	}
	compareState(t, want, readState(t, s))
	// Still writable after the file was swapped.
	put := mustPut(t, s, "after", "defrag")
	if put.GetHeader().GetRevision() != want.rev+1 {
		t.Errorf("put after defrag at %d, want %d", put.GetHeader().GetRevision(), want.rev+1)
	}
}

func TestSnapshot(t *testing.T) {
	s := startServer(t, testConfig(t.TempDir()))
	writeHistory(t, s, 20)
	snap, err := s.maint.Snapshot(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	// Writes after the snapshot was taken do not change it.
	mustPut(t, s, "later", strings.Repeat("x", 4096))
	size := snap.Size()
	if size <= 0 {
		t.Fatalf("Size = %d", size)
	}
	var buf bytes.Buffer
	n, err := snap.WriteTo(&buf)
	if err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	if n != size || int64(buf.Len()) != size {
		t.Fatalf("WriteTo wrote %d (buffer %d), Size %d", n, buf.Len(), size)
	}
}

func TestMoveLeader(t *testing.T) {
	s := startServer(t, testConfig(t.TempDir()))
	tests := []struct {
		name    string
		target  uint64
		wantErr error
	}{
		{"self", etcdDefaultMemberID, nil},
		{"non-member", 0x1234, errs.ErrBadLeaderTransferee},
		{"zero", 0, errs.ErrBadLeaderTransferee},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.maint.MoveLeader(testCtx(t), &pb.MoveLeaderRequest{TargetID: tt.target})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("MoveLeader(%x) = %v, want %v", tt.target, err, tt.wantErr)
			}
			if s.Leader() != s.ID() {
				t.Errorf("leader = %x after MoveLeader, want self", s.Leader())
			}
		})
	}
	mustPut(t, s, "still", "leader")
}
