package backend

import (
	"fmt"
	"slices"
	"testing"
)

func pw(bucket, key, value string) pendingWrite {
	return pendingWrite{bucket: []byte(bucket), write: bufferedWrite{key: []byte(key), value: []byte(value)}}
}

func TestWithWritesNewestWinsAndSharesOldState(t *testing.T) {
	v1 := releasedWrites{}.withWrites([]pendingWrite{pw("b", "k", "1"), pw("b", "j", "1"), pw("b", "k", "2")})
	v2 := v1.withWrites([]pendingWrite{pw("b", "j", "3"), pw("c", "x", "1")})

	tests := []struct {
		view        releasedWrites
		bucket, key string
		want        string
		found       bool
	}{
		{v1, "b", "k", "2", true}, // last write of a round wins
		{v1, "b", "j", "1", true},
		{v1, "c", "x", "", false},
		{v2, "b", "j", "3", true}, // a later round wins
		{v2, "b", "k", "2", true},
		{v2, "c", "x", "1", true},
	}
	for i, tt := range tests {
		w, ok := tt.view.of([]byte(tt.bucket)).get([]byte(tt.key))
		if ok != tt.found || string(w.value) != tt.want {
			t.Errorf("case %d: get(%s/%s) = %q, %v; want %q, %v", i, tt.bucket, tt.key, w.value, ok, tt.want, tt.found)
		}
	}
}

func TestRunsStayLogarithmic(t *testing.T) {
	var runs bucketRuns
	const writes = 10000
	for i := 0; i < writes; i++ {
		runs = runs.add(run{{key: []byte(fmt.Sprintf("%05d", i*7%writes))}})
		if limit := 2 * bitLen(i+1); len(runs) > limit {
			t.Fatalf("after %d writes %d runs, want at most %d", i+1, len(runs), limit)
		}
	}
	var keys []string
	it := newRunsIter(runs, nil, nil)
	for w, ok := it.next(); ok; w, ok = it.next() {
		keys = append(keys, string(w.key))
	}
	if len(keys) != writes || !slices.IsSorted(keys) {
		t.Fatalf("iterated %d keys (sorted %v), want %d sorted", len(keys), slices.IsSorted(keys), writes)
	}
}

func bitLen(n int) int {
	l := 0
	for ; n > 0; n >>= 1 {
		l++
	}
	return l
}
