package etcdserver

import (
	"context"
	"errors"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/apply"
	"github.com/cairnkv/cairn/server/auth"
	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/storage/mvcc"
)

// fakeKVMember records what KVService asks of the member: read barriers
// and proposals, which it answers with canned results.
type fakeKVMember struct {
	barrierErr error
	barriers   int
	proposed   []*pb.InternalRaftRequest
	result     *apply.Result // what every proposal is answered with
}

func (f *fakeKVMember) linearizableReadNotify(context.Context) error {
	f.barriers++
	return f.barrierErr
}
func (f *fakeKVMember) propose(_ context.Context, r *pb.InternalRaftRequest) (*apply.Result, error) {
	f.proposed = append(f.proposed, r)
	return f.result, nil
}
func (f *fakeKVMember) proposeRequest(ctx context.Context, r *pb.InternalRaftRequest) (proto.Message, error) {
	res, _ := f.propose(ctx, r)
	if res.Err != nil {
		return nil, res.Err
	}
	return res.Resp, nil
}
func (f *fakeKVMember) fillHeader(h *pb.ResponseHeader) { h.MemberId = 7 }

// fakeKVStores serves reads from canned answers.
type fakeKVStores struct {
	stopped bool
	full    bool // no quota left
	ranges  int
	txns    int
}

func (f *fakeKVStores) rangeLocal(context.Context, *pb.RangeRequest) (*pb.RangeResponse, error) {
	if f.stopped {
		return nil, errs.ErrStopped
	}
	f.ranges++
	return &pb.RangeResponse{Header: &pb.ResponseHeader{Revision: 5}, Count: 1}, nil
}
func (f *fakeKVStores) txnLocal(_ context.Context, _ auth.AuthInfo, _ *pb.TxnRequest) (*pb.TxnResponse, error) {
	f.txns++
	return &pb.TxnResponse{Header: &pb.ResponseHeader{}, Succeeded: true}, nil
}
func (f *fakeKVStores) quotaAvailable(proto.Message) (fits, ok bool) { return !f.full, !f.stopped }
func (f *fakeKVStores) newWatchStream() (mvcc.WatchStream, error)    { return nil, errs.ErrStopped }
func (f *fakeKVStores) keyAt(context.Context, []byte, int64) (*mvccpb.KeyValue, error) {
	return nil, nil
}

// openGate lets everything through, unless denied is set for ranges.
type openGate struct{ denied bool }

func (g openGate) authorizedRead(_ context.Context, check func(auth.AuthInfo) error, read func(auth.AuthInfo) error) error {
	if err := check(auth.AuthInfo{}); err != nil {
		return err
	}
	return read(auth.AuthInfo{})
}
func (g openGate) rangePermitted(auth.AuthInfo, []byte, []byte) error {
	if g.denied {
		return auth.ErrPermissionDenied
	}
	return nil
}
func (g openGate) IsWatchPermitted(context.Context, []byte, []byte) error { return nil }

func newTestKV(m *fakeKVMember, st *fakeKVStores, g openGate) *KVService {
	return &KVService{self: 9, member: m, stores: st, auth: g, stop: make(chan struct{})}
}

// A linearizable read passes the read barrier first; a serializable one
// does not; both read the local store and get the member's header.
func TestKVServiceRangeBarrier(t *testing.T) {
	barrierFailed := errors.New("no quorum")
	tests := []struct {
		name         string
		serializable bool
		barrierErr   error
		denied       bool
		stopped      bool
		wantBarriers int
		wantErr      error
	}{
		{"linearizable", false, nil, false, false, 1, nil},
		{"serializable", true, nil, false, false, 0, nil},
		{"barrier fails", false, barrierFailed, false, false, 1, barrierFailed},
		{"serializable ignores the barrier", true, barrierFailed, false, false, 0, nil},
		{"permission denied", true, nil, true, false, 0, auth.ErrPermissionDenied},
		{"stores closed", true, nil, false, true, 0, errs.ErrStopped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, st := &fakeKVMember{barrierErr: tt.barrierErr}, &fakeKVStores{stopped: tt.stopped}
			resp, err := newTestKV(m, st, openGate{denied: tt.denied}).Range(context.Background(), &pb.RangeRequest{Key: []byte("k"), Serializable: tt.serializable})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Range error %v, want %v", err, tt.wantErr)
			}
			if m.barriers != tt.wantBarriers {
				t.Errorf("%d read barriers, want %d", m.barriers, tt.wantBarriers)
			}
			if err == nil && (resp.Header.GetMemberId() != 7 || resp.Header.GetRevision() != 5) {
				t.Errorf("header %v: want the store's revision and the member's identity", resp.Header)
			}
		})
	}
}

// A write that does not fit the quota raises NOSPACE (as this member)
// instead of being proposed.
func TestKVServicePutOverQuota(t *testing.T) {
	m := &fakeKVMember{result: &apply.Result{Resp: &pb.AlarmResponse{Header: &pb.ResponseHeader{}}}}
	_, err := newTestKV(m, &fakeKVStores{full: true}, openGate{}).Put(context.Background(), &pb.PutRequest{Key: []byte("k")})
	if !errors.Is(err, errs.ErrNoSpace) {
		t.Fatalf("Put error %v, want ErrNoSpace", err)
	}
	if len(m.proposed) != 1 || m.proposed[0].GetAlarm().GetAlarm() != pb.AlarmType_NOSPACE || m.proposed[0].GetAlarm().GetMemberID() != 9 {
		t.Fatalf("proposed %v, want only this member's NOSPACE alarm", m.proposed)
	}
	if _, err := newTestKV(m, &fakeKVStores{stopped: true}, openGate{}).Put(context.Background(), &pb.PutRequest{}); !errors.Is(err, errs.ErrStopped) {
		t.Errorf("Put on closed stores: %v, want ErrStopped", err)
	}
}

// A Txn that only reads is served by the local store; one that writes is
// proposed.
func TestKVServiceTxnReadOnlyIsLocal(t *testing.T) {
	read := &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("k")}}}
	write := &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("k")}}}
	tests := []struct {
		name                    string
		ops                     []*pb.RequestOp
		wantLocal, wantProposed int
		wantBarriers            int
	}{
		{"reads", []*pb.RequestOp{read}, 1, 0, 1},
		{"a write", []*pb.RequestOp{read, write}, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, st := &fakeKVMember{result: &apply.Result{Resp: &pb.TxnResponse{Header: &pb.ResponseHeader{}}}}, &fakeKVStores{}
			if _, err := newTestKV(m, st, openGate{}).Txn(context.Background(), &pb.TxnRequest{Success: tt.ops}); err != nil {
				t.Fatal(err)
			}
			if st.txns != tt.wantLocal || len(m.proposed) != tt.wantProposed || m.barriers != tt.wantBarriers {
				t.Errorf("local %d, proposed %d, barriers %d; want %d, %d, %d",
					st.txns, len(m.proposed), m.barriers, tt.wantLocal, tt.wantProposed, tt.wantBarriers)
			}
		})
	}
}

// A physical compaction waits until the old revisions are gone, or the
// member stops.
func TestKVServiceCompactPhysicalWaits(t *testing.T) {
	physc := make(chan struct{})
	m := &fakeKVMember{result: &apply.Result{Resp: &pb.CompactionResponse{Header: &pb.ResponseHeader{}}, Physc: physc}}
	k := newTestKV(m, &fakeKVStores{}, openGate{})
	stop := make(chan struct{})
	k.stop = stop
	done := make(chan error, 1)
	go func() {
		_, err := k.Compact(context.Background(), &pb.CompactionRequest{Revision: 3, Physical: true})
		done <- err
	}()
	close(stop)
	if err := <-done; !errors.Is(err, errs.ErrStopped) {
		t.Errorf("Compact after stop: %v, want ErrStopped", err)
	}
	close(physc)
	k.stop = make(chan struct{})
	if _, err := k.Compact(context.Background(), &pb.CompactionRequest{Revision: 3, Physical: true}); err != nil {
		t.Errorf("Compact once compacted: %v", err)
	}
}
