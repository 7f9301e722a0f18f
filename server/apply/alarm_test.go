package apply

import (
	"errors"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/storage/backend"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

func alarmReq(action pb.AlarmRequest_AlarmAction, member uint64, t pb.AlarmType) *pb.InternalRaftRequest {
	return &pb.InternalRaftRequest{Alarm: &pb.AlarmRequest{Action: action, MemberID: member, Alarm: t}}
}

func member(id uint64, t pb.AlarmType) *pb.AlarmMember {
	return &pb.AlarmMember{MemberID: id, Alarm: t}
}

func equalAlarms(x, y []*pb.AlarmMember) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if !proto.Equal(x[i], y[i]) {
			return false
		}
	}
	return true
}

func TestAlarmActions(t *testing.T) {
	e := newEnv(t, Config{})
	e.put(t, "k", "v") // revision 2, reported in every alarm response
	const (
		get        = pb.AlarmRequest_GET
		activate   = pb.AlarmRequest_ACTIVATE
		deactivate = pb.AlarmRequest_DEACTIVATE
		none       = pb.AlarmType_NONE
		nospace    = pb.AlarmType_NOSPACE
		corrupt    = pb.AlarmType_CORRUPT
	)
	steps := []struct {
		name       string
		req        *pb.InternalRaftRequest
		want       []*pb.AlarmMember
		wantActive []*pb.AlarmMember
	}{
		{"get with none active", alarmReq(get, 0, none), nil, nil},
		{"activate", alarmReq(activate, 9, nospace), []*pb.AlarmMember{member(9, nospace)}, []*pb.AlarmMember{member(9, nospace)}},
		{"activate again returns the active alarm", alarmReq(activate, 9, nospace), []*pb.AlarmMember{member(9, nospace)}, []*pb.AlarmMember{member(9, nospace)}},
		{"activate another member", alarmReq(activate, 3, nospace), []*pb.AlarmMember{member(3, nospace)}, []*pb.AlarmMember{member(3, nospace), member(9, nospace)}},
		{"activate another type", alarmReq(activate, 1, corrupt), []*pb.AlarmMember{member(1, corrupt)}, []*pb.AlarmMember{member(3, nospace), member(9, nospace), member(1, corrupt)}},
		{"activate none is ignored", alarmReq(activate, 5, none), nil, []*pb.AlarmMember{member(3, nospace), member(9, nospace), member(1, corrupt)}},
		{"get all, sorted by type then member", alarmReq(get, 0, none), []*pb.AlarmMember{member(3, nospace), member(9, nospace), member(1, corrupt)}, nil},
		{"get one type", alarmReq(get, 0, corrupt), []*pb.AlarmMember{member(1, corrupt)}, nil},
		{"deactivate an inactive alarm", alarmReq(deactivate, 3, corrupt), nil, []*pb.AlarmMember{member(3, nospace), member(9, nospace), member(1, corrupt)}},
		{"deactivate", alarmReq(deactivate, 9, nospace), []*pb.AlarmMember{member(9, nospace)}, []*pb.AlarmMember{member(3, nospace), member(1, corrupt)}},
		{"unknown action answers empty", alarmReq(pb.AlarmRequest_AlarmAction(7), 3, nospace), nil, []*pb.AlarmMember{member(3, nospace), member(1, corrupt)}},
	}
	for _, s := range steps {
		resp := e.mustApply(t, s.req).(*pb.AlarmResponse)
		if !equalAlarms(resp.Alarms, s.want) {
			t.Errorf("%s: alarms = %v, want %v", s.name, resp.Alarms, s.want)
		}
		if resp.Header.GetRevision() != 2 {
			t.Errorf("%s: header = %v, want revision 2", s.name, resp.Header)
		}
		if s.wantActive != nil && !equalAlarms(e.a.Alarms(), s.wantActive) {
			t.Errorf("%s: active = %v, want %v", s.name, e.a.Alarms(), s.wantActive)
		}
	}
}

func TestAlarmsAreCopies(t *testing.T) {
	e := newEnv(t, Config{})
	e.mustApply(t, alarmReq(pb.AlarmRequest_ACTIVATE, 1, pb.AlarmType_NOSPACE))
	e.a.Alarms()[0].MemberID = 42
	if got := e.a.Alarms()[0].MemberID; got != 1 {
		t.Errorf("Alarms shares state with the caller: member %d", got)
	}
}

func TestAlarmsSurviveNewAndReopen(t *testing.T) {
	e := newEnv(t, Config{})
	e.mustApply(t, alarmReq(pb.AlarmRequest_ACTIVATE, 2, pb.AlarmType_CORRUPT))
	e.mustApply(t, alarmReq(pb.AlarmRequest_ACTIVATE, 1, pb.AlarmType_NOSPACE))
	e.mustApply(t, alarmReq(pb.AlarmRequest_ACTIVATE, 3, pb.AlarmType_NOSPACE))
	e.mustApply(t, alarmReq(pb.AlarmRequest_DEACTIVATE, 3, pb.AlarmType_NOSPACE))
	want := []*pb.AlarmMember{member(1, pb.AlarmType_NOSPACE), member(2, pb.AlarmType_CORRUPT)}

	again, err := New(Config{KV: e.kv, Backend: e.be})
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Alarms(); !equalAlarms(got, want) {
		t.Errorf("after New on the same backend: %v, want %v", got, want)
	}

	// The bucket holds etcd's layout: marshaled AlarmMember keys, empty values.
	tx := e.be.ReadTx()
	tx.RLock()
	keys, vals := tx.UnsafeRange(backend.BucketAlarm, []byte{0}, []byte{0xff}, 0)
	tx.RUnlock()
	if len(keys) != 2 {
		t.Fatalf("alarm bucket has %d keys, want 2", len(keys))
	}
	for i, k := range keys {
		m := &pb.AlarmMember{}
		if err := proto.Unmarshal(k, m); err != nil || len(vals[i]) != 0 {
			t.Errorf("alarm key %x value %x: %v", k, vals[i], err)
		}
	}

	// After the member's commit the alarms are on disk.
	e.be.Commit()
	_ = e.kv.Close()
	if err := e.be.Close(); err != nil {
		t.Fatal(err)
	}
	be, err := backend.Open(backend.Config{Path: e.path})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	kv := mvcc.New(zaptest.NewLogger(t), be, mvcc.StoreConfig{})
	defer kv.Close()
	reopened, err := New(Config{KV: kv, Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	if got := reopened.Alarms(); !equalAlarms(got, want) {
		t.Errorf("after reopening the backend: %v, want %v", got, want)
	}
	// The corrupt alarm still blocks KV requests.
	if res := reopened.Apply(t.Context(), rangeReq(&pb.RangeRequest{Key: []byte("k")})); !errors.Is(res.Err, errs.ErrCorrupt) {
		t.Errorf("range after reopen: err = %v, want ErrCorrupt", res.Err)
	}
}

func TestNoSpaceAlarmCapsWrites(t *testing.T) {
	putOp := opPut("new", "v")
	tests := []struct {
		name    string
		req     *pb.InternalRaftRequest
		wantErr error
	}{
		{"put", putReq(&pb.PutRequest{Key: []byte("new"), Value: []byte("v")}), errs.ErrNoSpace},
		{"txn with a put", txnReq(&pb.TxnRequest{Success: []*pb.RequestOp{putOp}}), errs.ErrNoSpace},
		{"txn with a put in the branch not taken", txnReq(&pb.TxnRequest{Failure: []*pb.RequestOp{putOp}}), errs.ErrNoSpace},
		{"txn with a nested put", txnReq(&pb.TxnRequest{Success: []*pb.RequestOp{opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{putOp}})}}), errs.ErrNoSpace},
		{"txn that only deletes", txnReq(&pb.TxnRequest{Success: []*pb.RequestOp{opDelete("a", "")}}), nil},
		{"txn that only reads", txnReq(&pb.TxnRequest{Success: []*pb.RequestOp{opRange(&pb.RangeRequest{Key: []byte("a")})}}), nil},
		{"delete", deleteReq(&pb.DeleteRangeRequest{Key: []byte("a")}), nil},
		{"range", rangeReq(&pb.RangeRequest{Key: []byte("a")}), nil},
		{"compaction", &pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: 2}}, nil},
		{"another alarm", alarmReq(pb.AlarmRequest_ACTIVATE, 2, pb.AlarmType_NOSPACE), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			e.put(t, "a", "1")
			e.mustApply(t, alarmReq(pb.AlarmRequest_ACTIVATE, 1, pb.AlarmType_NOSPACE))
			res := e.apply(tt.req)
			if !errors.Is(res.Err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", res.Err, tt.wantErr)
			}
			if res.Physc != nil {
				<-res.Physc
			}
			if tt.wantErr != nil && (res.Resp != nil || e.kv.Rev() != 2) {
				t.Errorf("capped request wrote: resp %v revision %d", res.Resp, e.kv.Rev())
			}
		})
	}
}

func TestNoSpaceAlarmLifted(t *testing.T) {
	e := newEnv(t, Config{})
	e.mustApply(t, alarmReq(pb.AlarmRequest_ACTIVATE, 1, pb.AlarmType_NOSPACE))
	if res := e.apply(putReq(&pb.PutRequest{Key: []byte("k")})); !errors.Is(res.Err, errs.ErrNoSpace) {
		t.Fatalf("err = %v, want ErrNoSpace", res.Err)
	}
	e.mustApply(t, alarmReq(pb.AlarmRequest_DEACTIVATE, 1, pb.AlarmType_NOSPACE))
	e.put(t, "k", "v")
}

func TestCorruptAlarmBlocksKV(t *testing.T) {
	e := newEnv(t, Config{})
	e.put(t, "a", "1")
	e.mustApply(t, alarmReq(pb.AlarmRequest_ACTIVATE, 1, pb.AlarmType_CORRUPT))
	tests := []struct {
		name    string
		req     *pb.InternalRaftRequest
		wantErr error
	}{
		{"range", rangeReq(&pb.RangeRequest{Key: []byte("a")}), errs.ErrCorrupt},
		{"put", putReq(&pb.PutRequest{Key: []byte("a")}), errs.ErrCorrupt},
		{"delete", deleteReq(&pb.DeleteRangeRequest{Key: []byte("a")}), errs.ErrCorrupt},
		{"txn", txnReq(&pb.TxnRequest{}), errs.ErrCorrupt},
		{"compaction", &pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: 1}}, errs.ErrCorrupt},
		{"alarm get", alarmReq(pb.AlarmRequest_GET, 0, pb.AlarmType_NONE), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.apply(tt.req)
			if !errors.Is(res.Err, tt.wantErr) {
				t.Errorf("err = %v, want %v", res.Err, tt.wantErr)
			}
		})
	}
	if e.kv.Rev() != 2 {
		t.Errorf("revision = %d, want 2", e.kv.Rev())
	}
	// Clearing the alarm goes through, and KV requests work again.
	e.mustApply(t, alarmReq(pb.AlarmRequest_DEACTIVATE, 1, pb.AlarmType_CORRUPT))
	e.put(t, "a", "2")
}
