package v3rpc

import (
	"bytes"
	"context"
	"io"
	"sort"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/errs"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// fakeServer is an in-memory Server: a sorted key space at one revision,
// with injectable errors and a log of the Range requests it served.
type fakeServer struct {
	mu        sync.Mutex
	kvs       []*mvccpb.KeyValue // sorted by key
	rev       int64
	err       error // returned by every call when set
	snapshot  []byte
	ranges    []*pb.RangeRequest
	calls     int
	lastTxn   *pb.TxnRequest
	omitIDs   bool // respond with headers that lack cluster/member id
	statusVer string
	// rangeFailAt makes the Range call with this 1-based index fail with
	// errs.ErrTimeout (0: never).
	rangeFailAt int
	// defragEntered, when set, is closed by Defragment, which then waits
	// for defragRelease.
	defragEntered, defragRelease chan struct{}
}

const (
	fakeClusterID = 0xc1
	fakeMemberID  = 0x3e
	fakeTerm      = 7
)

func newFakeServer() *fakeServer { return &fakeServer{rev: 1, omitIDs: true, statusVer: "3.7.0"} }

func (f *fakeServer) put(key, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rev++
	kv := &mvccpb.KeyValue{Key: []byte(key), Value: []byte(value), CreateRevision: f.rev, ModRevision: f.rev, Version: 1}
	i := sort.Search(len(f.kvs), func(i int) bool { return bytes.Compare(f.kvs[i].Key, kv.Key) >= 0 })
	if i < len(f.kvs) && bytes.Equal(f.kvs[i].Key, kv.Key) {
		f.kvs[i] = kv
		return
	}
	f.kvs = append(f.kvs, nil)
	copy(f.kvs[i+1:], f.kvs[i:])
	f.kvs[i] = kv
}

func (f *fakeServer) header() *pb.ResponseHeader {
	if f.omitIDs {
		return &pb.ResponseHeader{Revision: f.rev}
	}
	return &pb.ResponseHeader{ClusterId: fakeClusterID, MemberId: fakeMemberID, Revision: f.rev, RaftTerm: fakeTerm}
}

func (f *fakeServer) begin() error {
	f.mu.Lock()
	f.calls++
	return f.err
}

func (f *fakeServer) inRange(r *pb.RangeRequest, key []byte) bool {
	switch {
	case len(r.RangeEnd) == 0:
		return bytes.Equal(key, r.Key)
	case bytes.Equal(r.RangeEnd, []byte{0}):
		return bytes.Compare(key, r.Key) >= 0
	default:
		return bytes.Compare(key, r.Key) >= 0 && bytes.Compare(key, r.RangeEnd) < 0
	}
}

func (f *fakeServer) Range(_ context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	err := f.begin()
	defer f.mu.Unlock()
	f.ranges = append(f.ranges, proto.Clone(r).(*pb.RangeRequest))
	if err != nil {
		return nil, err
	}
	if len(f.ranges) == f.rangeFailAt {
		return nil, errs.ErrTimeout
	}
	resp := &pb.RangeResponse{Header: f.header()}
	for _, kv := range f.kvs {
		if !f.inRange(r, kv.Key) {
			continue
		}
		resp.Count++
		if r.CountOnly || (r.Limit > 0 && int64(len(resp.Kvs)) >= r.Limit) {
			continue
		}
		out := proto.Clone(kv).(*mvccpb.KeyValue)
		if r.KeysOnly {
			out.Value = nil
		}
		resp.Kvs = append(resp.Kvs, out)
	}
	resp.More = !r.CountOnly && int64(len(resp.Kvs)) < resp.Count
	return resp, nil
}

func (f *fakeServer) Put(_ context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	if err := f.begin(); err != nil {
		f.mu.Unlock()
		return nil, err
	}
	f.mu.Unlock()
	f.put(string(r.Key), string(r.Value))
	f.mu.Lock()
	defer f.mu.Unlock()
	return &pb.PutResponse{Header: f.header()}, nil
}

func (f *fakeServer) DeleteRange(context.Context, *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	err := f.begin()
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &pb.DeleteRangeResponse{Header: f.header()}, nil
}

func (f *fakeServer) Txn(_ context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	err := f.begin()
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	f.lastTxn = r
	return &pb.TxnResponse{Header: f.header(), Succeeded: true}, nil
}

func (f *fakeServer) Compact(context.Context, *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	err := f.begin()
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &pb.CompactionResponse{Header: f.header()}, nil
}

func (f *fakeServer) Status(context.Context) (*pb.StatusResponse, error) {
	err := f.begin()
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &pb.StatusResponse{Header: f.header(), Version: "3.7.1", StorageVersion: f.statusVer, Leader: fakeMemberID}, nil
}

func (f *fakeServer) Hash(context.Context) (*pb.HashResponse, error) {
	err := f.begin()
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &pb.HashResponse{Header: f.header(), Hash: 42}, nil
}

func (f *fakeServer) HashKV(_ context.Context, rev int64) (*pb.HashKVResponse, error) {
	err := f.begin()
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &pb.HashKVResponse{Header: f.header(), Hash: 43, HashRevision: rev}, nil
}

func (f *fakeServer) Defragment(context.Context) error {
	err := f.begin()
	entered, release := f.defragEntered, f.defragRelease
	f.mu.Unlock()
	if entered != nil {
		close(entered)
		<-release
	}
	return err
}

func (f *fakeServer) Snapshot(context.Context) (backend.Snapshot, error) {
	err := f.begin()
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &fakeSnapshot{data: f.snapshot}, nil
}

func (f *fakeServer) Alarm(_ context.Context, r *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	err := f.begin()
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &pb.AlarmResponse{Alarms: []*pb.AlarmMember{{MemberID: r.MemberID, Alarm: r.Alarm}}}, nil
}

func (f *fakeServer) MoveLeader(context.Context, *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	err := f.begin()
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &pb.MoveLeaderResponse{}, nil
}

func (f *fakeServer) Header() *pb.ResponseHeader {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &pb.ResponseHeader{ClusterId: fakeClusterID, MemberId: fakeMemberID, Revision: f.rev, RaftTerm: fakeTerm}
}

func (f *fakeServer) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeServer) rangeLog() []*pb.RangeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*pb.RangeRequest(nil), f.ranges...)
}

// fakeSnapshot is a backend.Snapshot over a byte slice.
type fakeSnapshot struct{ data []byte }

func (s *fakeSnapshot) Size() int64 { return int64(len(s.data)) }

func (s *fakeSnapshot) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(s.data)
	return int64(n), err
}

func (s *fakeSnapshot) Close() error { return nil }
