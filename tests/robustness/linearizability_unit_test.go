package robustness

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestDecideLinearizability covers when porcupine runs and how its answer,
// or its being stopped, turns into the round's verdict.
func TestDecideLinearizability(t *testing.T) {
	waitForCtx := func(ctx context.Context) (porcupine.CheckResult, error) {
		<-ctx.Done()
		return porcupine.Illegal, nil // what an aborted search returns
	}
	answer := func(r porcupine.CheckResult) checkFunc {
		return func(context.Context) (porcupine.CheckResult, error) { return r, nil }
	}
	small := func() uint64 { return 1 << 20 }
	huge := func() uint64 { return 8 << 30 }
	long := porcupineBound{timeout: time.Hour, heapLimit: 4 << 30}
	tests := []struct {
		name       string
		violations int
		bound      porcupineBound
		heap       func() uint64
		check      checkFunc
		wantRan    bool
		wantFail   string // substring; "" = the round passes
	}{
		{"clean history, linearizable", 0, long, small, answer(porcupine.Ok), true, ""},
		{"illegal", 0, long, small, answer(porcupine.Illegal), true, "history is not linearizable"},
		{"violations found before: porcupine skipped", 3, long, small, nil, false, "skipped: the history checks found 3 violation(s)"},
		{"porcupine's own timeout", 0, long, small, answer(porcupine.Unknown), true, "linearizability check timed out (no answer within 1h0m0s)"},
		{"deadline passes", 0, porcupineBound{timeout: time.Millisecond}, small, waitForCtx, true, "linearizability check timed out (no answer within 1ms)"},
		{"heap over the limit", 0, long, huge, waitForCtx, true, "linearizability check timed out (live heap above 4096 MiB)"},
		{"no heap limit", 0, porcupineBound{timeout: time.Hour}, huge, answer(porcupine.Ok), true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			check := func(ctx context.Context) (porcupine.CheckResult, error) {
				called = true
				return tt.check(ctx)
			}
			v := decideLinearizability(tt.violations, tt.bound, tt.heap, check)
			if v.ran != tt.wantRan || called != tt.wantRan {
				t.Fatalf("ran=%v called=%v, want %v", v.ran, called, tt.wantRan)
			}
			if tt.wantFail == "" && v.failure != "" || !strings.Contains(v.failure, tt.wantFail) {
				t.Fatalf("failure %q, want %q", v.failure, tt.wantFail)
			}
		})
	}
}

// An ended context stops a real porcupine search of a linearizable history,
// and the verdict is "timed out", never a pass.
func TestCheckLinearizableStopsWithContext(t *testing.T) {
	recs := []record{
		{client: 0, in: put("key/0", "c0-1"), out: rev(2), call: 0, ret: 10},
		{client: 1, in: put("key/0", "c1-1"), out: rev(3), call: 5, ret: 15},
		{client: 0, in: get("key/0"), out: read(3, kv{key: "key/0", value: "c1-1", createRev: 2, mod: 3, version: 2}), call: 20, ret: 30},
	}
	ops, problems := buildHistory(recs, &revLog{final: 3, putAt: map[string]int64{"c0-1": 2, "c1-1": 3}})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	vis := filepath.Join(t.TempDir(), "vis.html")
	if res, err := checkLinearizable(minute(t), ops, nil, vis); res != porcupine.Ok || err != nil {
		t.Fatalf("live context: %s, %v; want Ok", res, err)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if res, _ := checkLinearizable(ended, ops, nil, vis); res == porcupine.Ok {
		t.Fatal("ended context: Ok, want the search abandoned")
	}
	v := decideLinearizability(0, porcupineBound{timeout: time.Nanosecond}, liveHeap, func(ctx context.Context) (porcupine.CheckResult, error) {
		<-ctx.Done()
		return checkLinearizable(ctx, ops, nil, vis)
	})
	if !strings.Contains(v.failure, "linearizability check timed out") {
		t.Fatalf("failure %q, want a time-out", v.failure)
	}
}
