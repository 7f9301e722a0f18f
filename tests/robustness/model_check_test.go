package robustness

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/cairnkv/cairn/tests/harness"
)

// hop is one hand-made operation: client, call and return time, request
// and response.
type hop struct {
	client    int
	call, ret int64
	in        *input
	out       *output
}

func history(ops ...hop) []porcupine.Operation {
	var h []porcupine.Operation
	for _, o := range ops {
		h = append(h, porcupine.Operation{ClientId: o.client, Call: o.call, Return: o.ret, Input: o.in, Output: o.out})
	}
	return h
}

func put(k, v string) *input          { return &input{kind: opPut, key: k, value: v} }
func get(k string) *input             { return &input{kind: opGet, key: k} }
func del(k string) *input             { return &input{kind: opDelete, key: k} }
func rev(r int64) *output             { return &output{rev: r} }
func read(r int64, kvs ...kv) *output { return &output{rev: r, kvs: kvs} }
func unknown() *output                { return &output{unknown: true, err: "timeout"} }

const never = int64(time.Hour)

func TestModel(t *testing.T) {
	a1 := kv{key: "a", value: "1", createRev: 2, mod: 2, version: 1}
	a2 := kv{key: "a", value: "2", createRev: 2, mod: 3, version: 2}
	tests := []struct {
		name string
		ok   bool
		h    []porcupine.Operation
	}{
		{"put then get", true, history(
			hop{0, 0, 10, put("a", "1"), rev(2)},
			hop{1, 20, 30, get("a"), read(2, a1)},
		)},
		{"stale read", false, history(
			hop{0, 0, 10, put("a", "1"), rev(2)},
			hop{0, 20, 30, put("a", "2"), rev(3)},
			hop{1, 40, 50, get("a"), read(2, a1)},
		)},
		{"concurrent read may see the old value", true, history(
			hop{0, 0, 10, put("a", "1"), rev(2)},
			hop{0, 20, 30, put("a", "2"), rev(3)},
			hop{1, 25, 50, get("a"), read(2, a1)},
			hop{2, 40, 60, get("a"), read(3, a2)},
		)},
		{"reads go back in time", false, history(
			hop{0, 0, 10, put("a", "1"), rev(2)},
			hop{0, 20, 30, put("a", "2"), rev(3)},
			hop{1, 15, 50, get("a"), read(3, a2)},
			hop{2, 51, 60, get("a"), read(2, a1)},
		)},
		{"lost acknowledged write", false, history(
			hop{0, 0, 10, put("a", "1"), rev(2)},
			hop{1, 20, 30, get("a"), read(1)},
		)},
		{"skipped revision", false, history(
			hop{0, 0, 10, put("a", "1"), rev(3)},
		)},
		{"wrong header revision on a read", false, history(
			hop{0, 0, 10, put("a", "1"), rev(2)},
			hop{1, 20, 30, get("a"), read(3, a1)},
		)},
		{"wrong version", false, history(
			hop{0, 0, 10, put("a", "1"), rev(2)},
			hop{0, 20, 30, put("a", "2"), rev(3)},
			hop{1, 40, 50, get("a"), read(3, kv{key: "a", value: "2", createRev: 3, mod: 3, version: 1})},
		)},
		{"delete of a missing key keeps the revision", true, history(
			hop{0, 0, 10, del("a"), &output{rev: 1, deleted: 0}},
			hop{0, 20, 30, put("a", "1"), rev(2)},
			hop{0, 40, 50, del("a"), &output{rev: 3, deleted: 1}},
			hop{0, 60, 70, put("a", "x"), rev(4)},
			hop{1, 80, 90, get("a"), read(4, kv{key: "a", value: "x", createRev: 4, mod: 4, version: 1})},
		)},
		{"delete that bumps the revision of a missing key", false, history(
			hop{0, 0, 10, del("a"), &output{rev: 2, deleted: 1}},
		)},
		{"unknown delete that applied", true, history(
			hop{0, 0, 10, put("a", "1"), rev(2)},
			hop{1, 20, never, del("a"), unknown()},
			hop{0, 30, 40, get("a"), read(3)},
		)},
		{"unknown delete that did not apply", true, history(
			hop{0, 0, 10, put("a", "1"), rev(2)},
			hop{1, 20, never, del("a"), unknown()},
			hop{0, 30, 40, get("a"), read(2, a1)},
		)},
		{"unknown put resolved as applied must apply", false, history(
			hop{0, 0, 10, put("a", "1"), rev(2)},
			hop{1, 20, never, &input{kind: opPut, key: "a", value: "2", appliedAt: 3}, unknown()},
			hop{0, 30, 40, get("a"), read(2, a1)},
			hop{0, 50, 60, put("b", "1"), rev(3)},
		)},
		{"txn compare on mod revision", true, history(
			hop{0, 0, 10, put("a", "1"), rev(2)},
			hop{0, 20, 30, &input{kind: opTxn, key: "a", value: "2", cmpByRev: true, cmpRev: 2}, &output{rev: 3, succeeded: true}},
			hop{0, 40, 50, &input{kind: opTxn, key: "a", value: "3", cmpByRev: true, cmpRev: 2}, &output{rev: 3, kvs: []kv{a2}}},
			hop{0, 60, 70, &input{kind: opTxn, key: "b", value: "1", cmpByRev: true, cmpRev: 0}, &output{rev: 4, succeeded: true}},
		)},
		{"txn that succeeded although its compare is false", false, history(
			hop{0, 0, 10, put("a", "1"), rev(2)},
			hop{0, 20, 30, &input{kind: opTxn, key: "a", value: "2", cmpValue: "0"}, &output{rev: 3, succeeded: true}},
		)},
		{"txn value compare on a missing key fails", false, history(
			hop{0, 0, 10, &input{kind: opTxn, key: "a", value: "2", cmpValue: ""}, &output{rev: 2, succeeded: true}},
		)},
		{"revoke deletes the attached keys in one revision", true, history(
			hop{0, 0, 10, &input{kind: opPut, key: "a", value: "1", lease: 7}, rev(2)},
			hop{0, 20, 30, &input{kind: opPut, key: "c", value: "1", lease: 7}, rev(3)},
			hop{0, 40, 50, put("b", "1"), rev(4)},
			hop{0, 60, 70, &input{kind: opLeaseRevoke, lease: 7}, rev(5)},
			hop{1, 80, 90, &input{kind: opGet, key: "", pfx: true}, read(5, kv{key: "b", value: "1", createRev: 4, mod: 4, version: 1})},
		)},
		{"revoke leaves a detached key", false, history(
			hop{0, 0, 10, &input{kind: opPut, key: "a", value: "1", lease: 7}, rev(2)},
			hop{0, 20, 30, put("a", "2"), rev(3)},
			hop{0, 40, 50, &input{kind: opLeaseRevoke, lease: 7}, rev(4)},
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(kvModel, tt.h); got != tt.ok {
				t.Errorf("linearizable = %v, want %v", got, tt.ok)
			}
		})
	}
}

// TestCheckerFindsViolation feeds the full pipeline (history building,
// porcupine, visualization) a non-linearizable history.
func TestCheckerFindsViolation(t *testing.T) {
	recs := []record{
		{client: 0, in: put("key/0", "c0-1"), out: rev(2), call: 0, ret: 10},
		{client: 1, in: put("key/0", "c1-1"), out: unknown(), call: 5},
		{client: 0, in: get("key/0"), out: read(3, kv{key: "key/0", value: "c1-1", createRev: 2, mod: 3, version: 2}), call: 20, ret: 30},
		// A read after the one above that misses the write it saw.
		{client: 2, in: get("key/0"), out: read(2, kv{key: "key/0", value: "c0-1", createRev: 2, mod: 2, version: 1}), call: 40, ret: 50},
	}
	l := &revLog{final: 3, putAt: map[string]int64{"c0-1": 2, "c1-1": 3}}
	ops, problems := buildHistory(recs, l)
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	if len(ops) != 4 || ops[1].Return != 30 {
		t.Fatalf("unknown put not resolved to return by the first read that saw it: %+v", ops[1])
	}
	vis := filepath.Join(t.TempDir(), "vis.html")
	res, err := checkLinearizable(minute(t), ops, []faultEvent{{name: "kill", start: 1, end: 25}}, vis)
	if res != porcupine.Illegal {
		t.Fatalf("result %s, want %s", res, porcupine.Illegal)
	}
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(vis); err != nil || st.Size() == 0 {
		t.Fatalf("no visualization written: %v", err)
	}
	// Without the stale read, the same history is linearizable.
	if res, _ := checkLinearizable(minute(t), ops[:3], nil, vis); res != porcupine.Ok {
		t.Fatalf("prefix: %s, want Ok", res)
	}
}

func TestBuildHistoryReportsLostWrites(t *testing.T) {
	recs := []record{
		{client: 0, in: put("key/0", "c0-1"), out: rev(2), call: 0, ret: 10},
		{client: 0, in: put("key/0", "c0-2"), out: rev(3), call: 20, ret: 30},
		{client: 1, in: put("key/1", "c1-1"), out: unknown(), call: 5},
		{client: 1, in: get("key/0"), out: read(3, kv{key: "key/0", value: "c9-9", createRev: 2, mod: 3, version: 2}), call: 40, ret: 50, serializable: true},
	}
	l := &revLog{final: 3, putAt: map[string]int64{"c0-1": 2, "c1-1": 3, "zz": 4}}
	ops, problems := buildHistory(recs, l)
	// c0-2 is lost, the serializable get saw c9-9 that nobody wrote, and
	// "zz" was written by nobody.
	if len(problems) != 3 {
		t.Errorf("problems: %q", problems)
	}
	if len(ops) != 3 {
		t.Errorf("ops: %d, want 3 (serializable get excluded)", len(ops))
	}
}

// A write answered with NOSPACE may have been applied (the member that
// took the backend over its quota answers NOSPACE for the write it just
// applied, as etcd does) or refused (while the alarm is active): it is an
// unknown outcome that the revision history resolves.
func TestBuildHistoryNoSpace(t *testing.T) {
	nospace := func() *output { return &output{unknown: true, err: "etcdserver: mvcc: database space exceeded"} }
	recs := []record{
		{client: 0, in: put("key/0", "c0-1"), out: rev(2), call: 0, ret: 10},
		{client: 1, in: put("key/0", "c1-1"), out: nospace(), call: 20, ret: 30},
		{client: 2, in: put("key/1", "c2-1"), out: nospace(), call: 40, ret: 50},
		{client: 0, in: get("key/0"), out: read(3, kv{key: "key/0", value: "c1-1", createRev: 2, mod: 3, version: 2}), call: 60, ret: 70},
	}
	l := &revLog{final: 3, putAt: map[string]int64{"c0-1": 2, "c1-1": 3}}
	ops, problems := buildHistory(recs, l)
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	// c1-1 applied despite its NOSPACE answer: kept, at revision 3,
	// returning when the first read that saw it did; c2-1 was refused:
	// dropped.
	if len(ops) != 3 || ops[1].Input.(*input).appliedAt != 3 || ops[1].Return != 70 {
		t.Fatalf("ops = %+v", ops)
	}
	if res, _ := checkLinearizable(minute(t), ops, nil, filepath.Join(t.TempDir(), "vis.html")); res != porcupine.Ok {
		t.Fatalf("result %s, want Ok", res)
	}
}

// minute is a context that ends a minute from now or with the test.
func minute(t *testing.T) context.Context { return harness.Ctx(t, time.Minute) }
