package apply

import (
	"errors"
	"slices"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/server/errs"
)

func TestPut(t *testing.T) {
	tests := []struct {
		name      string
		req       *pb.PutRequest
		wantErr   error
		wantRev   int64  // header revision on success
		wantValue string // stored value of "k" afterwards
		wantLease int64
		wantPrev  string // value of prev_kv ("" = none)
	}{
		{name: "plain", req: &pb.PutRequest{Key: []byte("k"), Value: []byte("new")}, wantRev: 3, wantValue: "new"},
		{name: "new key", req: &pb.PutRequest{Key: []byte("n"), Value: []byte("x")}, wantRev: 3, wantValue: "old", wantLease: 5},
		{name: "with lease", req: &pb.PutRequest{Key: []byte("k"), Value: []byte("new"), Lease: 6}, wantRev: 3, wantValue: "new", wantLease: 6},
		{name: "missing lease", req: &pb.PutRequest{Key: []byte("k"), Value: []byte("new"), Lease: 99}, wantErr: errs.ErrLeaseNotFound, wantValue: "old", wantLease: 5},
		{name: "prev kv", req: &pb.PutRequest{Key: []byte("k"), Value: []byte("new"), PrevKv: true}, wantRev: 3, wantValue: "new", wantPrev: "old"},
		{name: "prev kv of a new key", req: &pb.PutRequest{Key: []byte("n"), Value: []byte("x"), PrevKv: true}, wantRev: 3, wantValue: "old", wantLease: 5},
		{name: "ignore value", req: &pb.PutRequest{Key: []byte("k"), IgnoreValue: true}, wantRev: 3, wantValue: "old"},
		{name: "ignore lease", req: &pb.PutRequest{Key: []byte("k"), Value: []byte("new"), IgnoreLease: true}, wantRev: 3, wantValue: "new", wantLease: 5},
		{name: "ignore both", req: &pb.PutRequest{Key: []byte("k"), IgnoreValue: true, IgnoreLease: true, PrevKv: true}, wantRev: 3, wantValue: "old", wantLease: 5, wantPrev: "old"},
		{name: "ignore value on a missing key", req: &pb.PutRequest{Key: []byte("n"), IgnoreValue: true}, wantErr: errs.ErrKeyNotFound, wantValue: "old", wantLease: 5},
		{name: "ignore lease on a missing key", req: &pb.PutRequest{Key: []byte("n"), Value: []byte("x"), IgnoreLease: true}, wantErr: errs.ErrKeyNotFound, wantValue: "old", wantLease: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Config{Leases: leaseSet{5, 6}})
			e.mustApply(t, putReq(&pb.PutRequest{Key: []byte("k"), Value: []byte("old"), Lease: 5})) // rev 2

			res := e.apply(putReq(tt.req))
			if !errors.Is(res.Err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", res.Err, tt.wantErr)
			}
			if tt.wantErr != nil {
				if res.Resp != nil {
					t.Errorf("resp = %v, want nil", res.Resp)
				}
				if rev := e.kv.Rev(); rev != 2 {
					t.Errorf("failed put bumped the revision to %d", rev)
				}
			} else {
				checkPutResponse(t, res.Resp.(*pb.PutResponse), tt.wantRev, tt.wantPrev)
			}
			kv := e.get(t, "k")
			if string(kv.Value) != tt.wantValue || kv.Lease != tt.wantLease {
				t.Errorf("stored k = %q lease %d, want %q lease %d", kv.Value, kv.Lease, tt.wantValue, tt.wantLease)
			}
		})
	}
}

func checkPutResponse(t *testing.T, resp *pb.PutResponse, wantRev int64, wantPrev string) {
	t.Helper()
	if resp.Header.Revision != wantRev {
		t.Errorf("header revision = %d, want %d", resp.Header.Revision, wantRev)
	}
	switch {
	case wantPrev == "" && resp.PrevKv != nil:
		t.Errorf("prev_kv = %v, want none", resp.PrevKv)
	case wantPrev != "" && (resp.PrevKv == nil || string(resp.PrevKv.Value) != wantPrev || resp.PrevKv.ModRevision != 2):
		t.Errorf("prev_kv = %v, want value %q at mod revision 2", resp.PrevKv, wantPrev)
	}
}

func TestPutWithoutLeaseLookup(t *testing.T) {
	e := newEnv(t, Config{})
	res := e.apply(putReq(&pb.PutRequest{Key: []byte("k"), Lease: 1}))
	if !errors.Is(res.Err, errs.ErrLeaseNotFound) {
		t.Errorf("err = %v, want ErrLeaseNotFound", res.Err)
	}
}

func TestDeleteRange(t *testing.T) {
	tests := []struct {
		name        string
		req         *pb.DeleteRangeRequest
		wantDeleted int64
		wantRev     int64
		wantPrev    []string
		wantLeft    []string
	}{
		{"single key", &pb.DeleteRangeRequest{Key: []byte("b")}, 1, 5, nil, []string{"a", "c"}},
		{"missing key keeps the revision", &pb.DeleteRangeRequest{Key: []byte("x")}, 0, 4, nil, []string{"a", "b", "c"}},
		{"range", &pb.DeleteRangeRequest{Key: []byte("a"), RangeEnd: []byte("c")}, 2, 5, nil, []string{"c"}},
		{"from key", &pb.DeleteRangeRequest{Key: []byte("b"), RangeEnd: []byte("\x00")}, 2, 5, nil, []string{"a"}},
		{"prev kv", &pb.DeleteRangeRequest{Key: []byte("a"), RangeEnd: []byte("\x00"), PrevKv: true}, 3, 5, []string{"a", "b", "c"}, []string{}},
		{"prev kv of nothing", &pb.DeleteRangeRequest{Key: []byte("x"), PrevKv: true}, 0, 4, []string{}, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			for _, k := range []string{"a", "b", "c"} {
				e.put(t, k, "v") // revisions 2..4
			}
			resp := e.mustApply(t, deleteReq(tt.req)).(*pb.DeleteRangeResponse)
			if resp.Deleted != tt.wantDeleted || resp.Header.Revision != tt.wantRev {
				t.Errorf("deleted %d rev %d, want %d %d", resp.Deleted, resp.Header.Revision, tt.wantDeleted, tt.wantRev)
			}
			if got := keysOf(resp.PrevKvs); !slices.Equal(got, tt.wantPrev) && (len(got) > 0 || len(tt.wantPrev) > 0) {
				t.Errorf("prev kvs = %v, want %v", got, tt.wantPrev)
			}
			left := e.mustApply(t, rangeReq(&pb.RangeRequest{Key: []byte("\x00"), RangeEnd: []byte("\x00")})).(*pb.RangeResponse)
			if got := keysOf(left.Kvs); !slices.Equal(got, tt.wantLeft) {
				t.Errorf("left = %v, want %v", got, tt.wantLeft)
			}
		})
	}
}

func TestResultKeepsNilResponseNil(t *testing.T) {
	var resp *pb.PutResponse
	if res := result(resp, errs.ErrKeyNotFound); res.Resp != nil {
		t.Errorf("Resp = %v, want a nil interface", res.Resp)
	}
	if res := result(&pb.PutResponse{}, nil); !proto.Equal(res.Resp, &pb.PutResponse{}) {
		t.Errorf("Resp = %v", res.Resp)
	}
}
