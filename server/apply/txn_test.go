package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/server/errs"
)

const (
	tVersion = pb.Compare_VERSION
	tCreate  = pb.Compare_CREATE
	tMod     = pb.Compare_MOD
	tLease   = pb.Compare_LEASE
	rEq      = pb.Compare_EQUAL
	rNe      = pb.Compare_NOT_EQUAL
	rGt      = pb.Compare_GREATER
	rLt      = pb.Compare_LESS
)

// cmpNum compares a numeric target of key (or of [key, end) when end != "").
func cmpNum(key, end string, target pb.Compare_CompareTarget, result pb.Compare_CompareResult, n int64) *pb.Compare {
	c := &pb.Compare{Key: []byte(key), Target: target, Result: result}
	if end != "" {
		c.RangeEnd = []byte(end)
	}
	switch target {
	case pb.Compare_VERSION:
		c.TargetUnion = &pb.Compare_Version{Version: n}
	case pb.Compare_CREATE:
		c.TargetUnion = &pb.Compare_CreateRevision{CreateRevision: n}
	case pb.Compare_MOD:
		c.TargetUnion = &pb.Compare_ModRevision{ModRevision: n}
	case pb.Compare_LEASE:
		c.TargetUnion = &pb.Compare_Lease{Lease: n}
	}
	return c
}

func cmpValue(key, end string, result pb.Compare_CompareResult, v string) *pb.Compare {
	c := &pb.Compare{Key: []byte(key), Target: pb.Compare_VALUE, Result: result,
		TargetUnion: &pb.Compare_Value{Value: []byte(v)}}
	if end != "" {
		c.RangeEnd = []byte(end)
	}
	return c
}

func opPut(key, value string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key), Value: []byte(value)}}}
}

func opPutReq(p *pb.PutRequest) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: p}}
}

func opRange(r *pb.RangeRequest) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: r}}
}

func opDelete(key, end string) *pb.RequestOp {
	d := &pb.DeleteRangeRequest{Key: []byte(key)}
	if end != "" {
		d.RangeEnd = []byte(end)
	}
	return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: d}}
}

func opTxn(t *pb.TxnRequest) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: t}}
}

// txnFixture: a = "1" (create 2, mod 2, version 1, no lease);
// b = "3" (create 3, mod 4, version 2, lease 7); revision 4.
func txnFixture(t *testing.T) *testEnv {
	t.Helper()
	e := newEnv(t, Config{Leases: leaseSet{7}})
	e.put(t, "a", "1")
	e.mustApply(t, putReq(&pb.PutRequest{Key: []byte("b"), Value: []byte("2"), Lease: 7}))
	e.mustApply(t, putReq(&pb.PutRequest{Key: []byte("b"), Value: []byte("3"), Lease: 7}))
	return e
}

func TestTxnCompare(t *testing.T) {
	e := txnFixture(t)
	tests := []struct {
		cmp  *pb.Compare
		want bool
	}{
		{cmpNum("b", "", tVersion, rEq, 2), true},
		{cmpNum("b", "", tVersion, rEq, 1), false},
		{cmpNum("b", "", tVersion, rNe, 1), true},
		{cmpNum("b", "", tVersion, rNe, 2), false},
		{cmpNum("b", "", tVersion, rGt, 1), true},
		{cmpNum("b", "", tVersion, rGt, 2), false},
		{cmpNum("b", "", tVersion, rLt, 3), true},
		{cmpNum("b", "", tVersion, rLt, 2), false},
		{cmpNum("b", "", tCreate, rEq, 3), true},
		{cmpNum("b", "", tCreate, rNe, 3), false},
		{cmpNum("b", "", tCreate, rGt, 2), true},
		{cmpNum("b", "", tCreate, rLt, 3), false},
		{cmpNum("b", "", tMod, rEq, 4), true},
		{cmpNum("b", "", tMod, rNe, 4), false},
		{cmpNum("b", "", tMod, rGt, 4), false},
		{cmpNum("b", "", tMod, rLt, 5), true},
		{cmpNum("b", "", tLease, rEq, 7), true},
		{cmpNum("b", "", tLease, rNe, 0), true},
		{cmpNum("b", "", tLease, rGt, 7), false},
		{cmpNum("b", "", tLease, rLt, 8), true},
		{cmpValue("b", "", rEq, "3"), true},
		{cmpValue("b", "", rEq, "2"), false},
		{cmpValue("b", "", rNe, "3"), false},
		{cmpValue("b", "", rNe, "x"), true},
		{cmpValue("b", "", rGt, "2"), true},
		{cmpValue("b", "", rGt, "3"), false},
		{cmpValue("b", "", rLt, "4"), true},
		{cmpValue("b", "", rLt, "3"), false},
		// A missing key compares as zero fields, except its value.
		{cmpNum("z", "", tVersion, rEq, 0), true},
		{cmpNum("z", "", tCreate, rEq, 0), true},
		{cmpNum("z", "", tMod, rLt, 1), true},
		{cmpNum("z", "", tMod, rGt, 0), false},
		{cmpNum("z", "", tLease, rEq, 0), true},
		{cmpValue("z", "", rEq, ""), false},
		{cmpValue("z", "", rNe, "x"), false},
		{cmpValue("z", "", rLt, "x"), false},
		// Over a range every key must satisfy the compare.
		{cmpNum("a", "c", tVersion, rGt, 0), true},
		{cmpNum("a", "c", tVersion, rEq, 2), false},
		{cmpNum("a", "\x00", tMod, rLt, 5), true},
		{cmpNum("a", "\x00", tCreate, rGt, 2), false},
		{cmpValue("a", "c", rGt, "0"), true},
		{cmpValue("a", "c", rEq, "3"), false},
		{cmpNum("x", "y", tVersion, rEq, 0), true},
		{cmpValue("x", "y", rNe, "v"), false},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s[%q,%q)/%s/%v", tt.cmp.Target, tt.cmp.Key, tt.cmp.RangeEnd, tt.cmp.Result, tt.cmp.TargetUnion)
		t.Run(name, func(t *testing.T) {
			resp := e.mustApply(t, txnReq(&pb.TxnRequest{Compare: []*pb.Compare{tt.cmp}})).(*pb.TxnResponse)
			if resp.Succeeded != tt.want {
				t.Errorf("succeeded = %v, want %v", resp.Succeeded, tt.want)
			}
			if resp.Header.Revision != 4 {
				t.Errorf("header revision = %d, want 4", resp.Header.Revision)
			}
		})
	}
}

func TestTxnCompareConjunction(t *testing.T) {
	e := txnFixture(t)
	tests := []struct {
		name string
		cmps []*pb.Compare
		want bool
	}{
		{"none", nil, true},
		{"all hold", []*pb.Compare{cmpNum("a", "", tVersion, rEq, 1), cmpValue("b", "", rEq, "3")}, true},
		{"one fails", []*pb.Compare{cmpNum("a", "", tVersion, rEq, 1), cmpValue("b", "", rEq, "2")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.mustApply(t, txnReq(&pb.TxnRequest{
				Compare: tt.cmps, Success: []*pb.RequestOp{opPut("branch", "success")},
				Failure: []*pb.RequestOp{opPut("branch", "failure")},
			})).(*pb.TxnResponse)
			want := map[bool]string{true: "success", false: "failure"}[tt.want]
			if resp.Succeeded != tt.want || string(e.get(t, "branch").Value) != want {
				t.Errorf("succeeded %v branch %q, want %v %q", resp.Succeeded, e.get(t, "branch").Value, tt.want, want)
			}
		})
	}
}

func TestTxnResponseRevisions(t *testing.T) {
	tests := []struct {
		name    string
		ops     []*pb.RequestOp
		wantOps []int64 // header revision of each op response
		wantRev int64
	}{
		{"writes share one revision", []*pb.RequestOp{opPut("x", "1"), opPut("y", "1"), opDelete("a", "")}, []int64{5, 5, 5}, 5},
		{"range before a write sees the old revision", []*pb.RequestOp{opRange(&pb.RangeRequest{Key: []byte("a")}), opPut("x", "1")}, []int64{4, 5}, 5},
		{"range after a write sees the new revision", []*pb.RequestOp{opPut("x", "1"), opRange(&pb.RangeRequest{Key: []byte("x")})}, []int64{5, 5}, 5},
		{"empty delete first reports the old revision", []*pb.RequestOp{opDelete("nope", ""), opPut("x", "1")}, []int64{4, 5}, 5},
		{"empty delete after a write reports the new one", []*pb.RequestOp{opPut("x", "1"), opDelete("nope", "")}, []int64{5, 5}, 5},
		{"nothing changed keeps the revision", []*pb.RequestOp{opDelete("nope", "")}, []int64{4}, 4},
		{"historical range reports the current revision", []*pb.RequestOp{opRange(&pb.RangeRequest{Key: []byte("b"), Revision: 3}), opPut("x", "1")}, []int64{4, 5}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := txnFixture(t)
			resp := e.mustApply(t, txnReq(&pb.TxnRequest{Success: tt.ops})).(*pb.TxnResponse)
			var got []int64
			for _, r := range resp.Responses {
				got = append(got, opHeaderRevision(r))
			}
			if !slices.Equal(got, tt.wantOps) || resp.Header.Revision != tt.wantRev {
				t.Errorf("op revisions %v header %d, want %v %d", got, resp.Header.Revision, tt.wantOps, tt.wantRev)
			}
			if rev := e.kv.Rev(); rev != tt.wantRev {
				t.Errorf("store revision = %d, want %d", rev, tt.wantRev)
			}
		})
	}
}

func opHeaderRevision(r *pb.ResponseOp) int64 {
	switch {
	case r.GetResponseRange() != nil:
		return r.GetResponseRange().Header.Revision
	case r.GetResponsePut() != nil:
		return r.GetResponsePut().Header.Revision
	case r.GetResponseDeleteRange() != nil:
		return r.GetResponseDeleteRange().Header.Revision
	case r.GetResponseTxn() != nil:
		return r.GetResponseTxn().Header.Revision
	}
	return -1
}

func TestTxnOpResponses(t *testing.T) {
	e := txnFixture(t)
	resp := e.mustApply(t, txnReq(&pb.TxnRequest{
		Compare: []*pb.Compare{cmpValue("a", "", rEq, "1")},
		Success: []*pb.RequestOp{
			opPutReq(&pb.PutRequest{Key: []byte("a"), Value: []byte("2"), PrevKv: true}),
			opRange(&pb.RangeRequest{Key: []byte("a"), RangeEnd: []byte("c")}),
			{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("b"), PrevKv: true}}},
			{}, // an empty op runs as a no-op
		},
	})).(*pb.TxnResponse)
	if !resp.Succeeded || len(resp.Responses) != 4 {
		t.Fatalf("resp = %v", resp)
	}
	if prev := resp.Responses[0].GetResponsePut().PrevKv; string(prev.GetValue()) != "1" {
		t.Errorf("put prev_kv = %v", prev)
	}
	rr := resp.Responses[1].GetResponseRange()
	if got := keysOf(rr.Kvs); !slices.Equal(got, []string{"a", "b"}) || string(rr.Kvs[0].Value) != "2" || rr.Count != 2 {
		t.Errorf("range in txn = %v", rr)
	}
	dr := resp.Responses[2].GetResponseDeleteRange()
	if dr.Deleted != 1 || len(dr.PrevKvs) != 1 || string(dr.PrevKvs[0].Value) != "3" {
		t.Errorf("delete in txn = %v", dr)
	}
	if resp.Responses[3].Response != nil {
		t.Errorf("empty op response = %v", resp.Responses[3])
	}
}

func TestTxnNestedSeesStateBeforeTxn(t *testing.T) {
	e := txnFixture(t)
	inner := &pb.TxnRequest{
		Compare: []*pb.Compare{cmpValue("a", "", rEq, "1")},
		Success: []*pb.RequestOp{opPut("inner", "saw-old"), opRange(&pb.RangeRequest{Key: []byte("a")})},
		Failure: []*pb.RequestOp{opPut("inner", "saw-new")},
	}
	resp := e.mustApply(t, txnReq(&pb.TxnRequest{
		Success: []*pb.RequestOp{opPut("a", "changed"), opTxn(inner)},
	})).(*pb.TxnResponse)

	if got := string(e.get(t, "inner").Value); got != "saw-old" {
		t.Errorf("inner = %q, want saw-old", got)
	}
	nested := resp.Responses[1].GetResponseTxn()
	if !nested.Succeeded || len(nested.Responses) != 2 {
		t.Fatalf("nested = %v", nested)
	}
	// etcd leaves a nested Txn's own header empty.
	if nested.Header == nil || nested.Header.Revision != 0 {
		t.Errorf("nested header = %v, want empty", nested.Header)
	}
	// Ops inside the nested Txn see the outer Txn's earlier writes.
	if kv := nested.Responses[1].GetResponseRange().Kvs[0]; string(kv.Value) != "changed" {
		t.Errorf("nested range saw %q, want changed", kv.Value)
	}
	if resp.Header.Revision != 5 || e.kv.Rev() != 5 || e.get(t, "inner").ModRevision != 5 {
		t.Errorf("revision %d store %d, want all writes at 5", resp.Header.Revision, e.kv.Rev())
	}
}

func TestTxnNestedFailureBranch(t *testing.T) {
	e := txnFixture(t)
	inner := &pb.TxnRequest{
		Compare: []*pb.Compare{cmpNum("b", "", tVersion, rEq, 9)},
		Success: []*pb.RequestOp{opPut("inner", "success")},
		Failure: []*pb.RequestOp{opPut("inner", "failure"), opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{opPut("deep", "1")}})},
	}
	resp := e.mustApply(t, txnReq(&pb.TxnRequest{
		Compare: []*pb.Compare{cmpNum("a", "", tVersion, rEq, 9)},
		Success: []*pb.RequestOp{opPut("outer", "success")},
		Failure: []*pb.RequestOp{opTxn(inner), opPut("outer", "failure")},
	})).(*pb.TxnResponse)
	if resp.Succeeded || resp.Responses[0].GetResponseTxn().Succeeded {
		t.Errorf("outer and inner should take the failure branch: %v", resp)
	}
	for key, want := range map[string]string{"outer": "failure", "inner": "failure", "deep": "1"} {
		if got := e.get(t, key); got == nil || string(got.Value) != want {
			t.Errorf("%s = %v, want %q", key, got, want)
		}
	}
}

func TestTxnErrorsWriteNothing(t *testing.T) {
	ignoreValue := func(key string) *pb.RequestOp {
		return opPutReq(&pb.PutRequest{Key: []byte(key), IgnoreValue: true})
	}
	tests := []struct {
		name    string
		txn     *pb.TxnRequest
		wantErr error
	}{
		{"missing lease", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("x", "1"), opPutReq(&pb.PutRequest{Key: []byte("y"), Lease: 99})}}, errs.ErrLeaseNotFound},
		{"ignore_value on a missing key", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("x", "1"), ignoreValue("z")}}, errs.ErrKeyNotFound},
		{"ignore_lease on a missing key", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("x", "1"), opPutReq(&pb.PutRequest{Key: []byte("z"), IgnoreLease: true})}}, errs.ErrKeyNotFound},
		{"ignore_value on a key the txn creates", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("z", "1"), ignoreValue("z")}}, errs.ErrKeyNotFound},
		{"ignore_value on a key the txn deleted", &pb.TxnRequest{Success: []*pb.RequestOp{opDelete("a", "c"), ignoreValue("b")}}, errs.ErrKeyNotFound},
		{"ignore_value after a nested delete", &pb.TxnRequest{Success: []*pb.RequestOp{opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{opDelete("a", "\x00")}}), ignoreValue("a")}}, errs.ErrKeyNotFound},
		{"error in a nested txn", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("x", "1"), opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{opPutReq(&pb.PutRequest{Key: []byte("y"), Lease: 99})}})}}, errs.ErrLeaseNotFound},
		{"future revision read", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("x", "1"), opRange(&pb.RangeRequest{Key: []byte("x"), Revision: 5})}}, errs.ErrFutureRev},
		{"compacted revision read", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("x", "1"), opRange(&pb.RangeRequest{Key: []byte("a"), Revision: 2})}}, errs.ErrCompacted},
		{"read-only txn with a future read", &pb.TxnRequest{Success: []*pb.RequestOp{opRange(&pb.RangeRequest{Key: []byte("a"), Revision: 9})}}, errs.ErrFutureRev},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := txnFixture(t)
			compact := e.apply(&pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: 3}})
			if compact.Err != nil {
				t.Fatal(compact.Err)
			}
			<-compact.Physc
			res := e.apply(txnReq(tt.txn))
			if !errors.Is(res.Err, tt.wantErr) || res.Resp != nil {
				t.Fatalf("resp %v err %v, want nil and %v", res.Resp, res.Err, tt.wantErr)
			}
			if rev := e.kv.Rev(); rev != 4 {
				t.Errorf("revision = %d, want 4 (nothing written)", rev)
			}
			all, err := e.a.Range(context.Background(), &pb.RangeRequest{Key: []byte("\x00"), RangeEnd: []byte("\x00")})
			if err != nil {
				t.Fatal(err)
			}
			if got := keysOf(all.Kvs); !slices.Equal(got, []string{"a", "b"}) {
				t.Errorf("keys = %v, want [a b]", got)
			}
		})
	}
}

func TestTxnChecksOnlyTheChosenBranch(t *testing.T) {
	tests := []struct {
		name string
		txn  *pb.TxnRequest
	}{
		{"bad op in the failure branch", &pb.TxnRequest{
			Success: []*pb.RequestOp{opPut("x", "1")},
			Failure: []*pb.RequestOp{opPutReq(&pb.PutRequest{Key: []byte("y"), Lease: 99})},
		}},
		{"ignore_value on a key deleted and put again", &pb.TxnRequest{
			Success: []*pb.RequestOp{opDelete("a", ""), opPut("a", "again"), opPutReq(&pb.PutRequest{Key: []byte("a"), IgnoreValue: true, Value: nil}), opPut("x", "1")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := txnFixture(t)
			resp := e.mustApply(t, txnReq(tt.txn)).(*pb.TxnResponse)
			if !resp.Succeeded || resp.Header.Revision != 5 || e.get(t, "x") == nil {
				t.Errorf("resp = %v", resp)
			}
		})
	}
}

func TestTxnReadOnlyAndNoChange(t *testing.T) {
	tests := []struct {
		name string
		txn  *pb.TxnRequest
	}{
		{"reads only", &pb.TxnRequest{Success: []*pb.RequestOp{opRange(&pb.RangeRequest{Key: []byte("a")})}, Failure: []*pb.RequestOp{opRange(&pb.RangeRequest{Key: []byte("b")})}}},
		{"nested reads only", &pb.TxnRequest{Success: []*pb.RequestOp{opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{opRange(&pb.RangeRequest{Key: []byte("a")})}})}}},
		{"delete of nothing", &pb.TxnRequest{Success: []*pb.RequestOp{opDelete("nope", "nope2")}}},
		{"empty", &pb.TxnRequest{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := txnFixture(t)
			resp := e.mustApply(t, txnReq(tt.txn)).(*pb.TxnResponse)
			if resp.Header.Revision != 4 || e.kv.Rev() != 4 {
				t.Errorf("header %d store %d, want 4", resp.Header.Revision, e.kv.Rev())
			}
		})
	}
}

// TestTxnNegativeReadRevision: etcd checks a Txn's reads against its
// compacted revision, -1 before the first compaction. So until then a read
// at revision -1 passes and reads the current revision, and only -2 and
// below are "compacted"; after a compaction every negative revision is.
// (Found by FuzzKVRequest.)
func TestTxnNegativeReadRevision(t *testing.T) {
	tests := []struct {
		name      string
		compactAt int64 // 0: never compacted
		rev       int64
		wantErr   error
	}{
		{"-1 before any compaction", 0, -1, nil},
		{"-2 before any compaction", 0, -2, errs.ErrCompacted},
		{"-1 after a compaction", 3, -1, errs.ErrCompacted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := txnFixture(t)
			if tt.compactAt != 0 {
				res := e.apply(&pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: tt.compactAt}})
				if res.Err != nil {
					t.Fatal(res.Err)
				}
				<-res.Physc
			}
			res := e.apply(txnReq(&pb.TxnRequest{Success: []*pb.RequestOp{opRange(&pb.RangeRequest{Key: []byte("a"), Revision: tt.rev})}}))
			if !errors.Is(res.Err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", res.Err, tt.wantErr)
			}
			if tt.wantErr != nil {
				return
			}
			kvs := res.Resp.(*pb.TxnResponse).Responses[0].GetResponseRange().GetKvs()
			if want := e.get(t, "a"); len(kvs) != 1 || kvs[0].ModRevision != want.ModRevision {
				t.Errorf("read %v, want the current %v", kvs, want)
			}
		})
	}
}
