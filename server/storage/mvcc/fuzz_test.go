package mvcc

import (
	"bytes"
	"slices"
	"testing"

	"github.com/cairnkv/cairn/pkg/fuzztest"
)

// Range end forms a request can carry, chosen by endForm.
const (
	endNil     = iota // no end: the single key
	endEmpty          // a non-nil empty end: every key >= key
	endFromKey        // "\x00": every key >= key
	endKey            // the end key given
	numEndForms
)

func rangeEndOf(form uint8, end []byte) []byte {
	switch form % numEndForms {
	case endNil:
		return nil
	case endEmpty:
		return []byte{}
	case endFromKey:
		return []byte{0}
	}
	return end
}

// modelInRange is the store's range convention, spelled out: nil end is
// the single key, an empty or "\x00" end has no upper bound, any other end
// is exclusive.
func modelInRange(k, key, end []byte) bool {
	switch {
	case end == nil:
		return bytes.Equal(k, key)
	case len(end) == 0 || bytes.Equal(end, []byte{0}):
		return bytes.Compare(k, key) >= 0
	}
	return bytes.Compare(k, key) >= 0 && bytes.Compare(k, end) < 0
}

// FuzzKeyRange checks the index's range scans, counts and the watchers'
// range membership against the convention, for arbitrary stored keys and
// request ranges. stored holds the keys (separated as in fuzztest.Keys), query
// the request's key and end, endForm how the end is given.
func FuzzKeyRange(f *testing.F) {
	f.Fuzz(func(t *testing.T, stored, query []byte, endForm uint8) {
		ti := newTreeIndex()
		var want [][]byte
		keys := fuzztest.Keys(stored)
		for i, k := range keys {
			ti.Put(k, Revision{Main: int64(i + 1)})
		}
		atRev := int64(len(keys))
		q := fuzztest.Keys(query)
		key, end := q[0], rangeEndOf(endForm, q[len(q)-1])
		ti.tree.Ascend(func(ki *keyIndex) bool {
			if modelInRange(ki.keyBytes(), key, end) {
				want = append(want, ki.keyBytes())
			}
			return true
		})

		got, _ := ti.Range(key, end, atRev)
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("Range(%q, %q) = %q, want %q", key, end, got, want)
		}
		if n := ti.CountRevisions(key, end, atRev); n != len(want) {
			t.Fatalf("CountRevisions(%q, %q) = %d, want %d", key, end, n, len(want))
		}
		w := newWatcher(0, nil, newKeyRange(key, end), 0, nil)
		ti.tree.Ascend(func(ki *keyIndex) bool {
			if w.holds(ki.keyBytes()) != modelInRange(ki.keyBytes(), key, end) {
				t.Fatalf("watcher on [%q, %q) holds(%q) = %v", key, end, ki.keyBytes(), w.holds(ki.keyBytes()))
			}
			return true
		})
	})
}

// TestFuzzSeeds keeps the committed seed corpus equal to its generator.
// Regenerate with CAIRN_WRITE_FUZZ_SEEDS=1 go test -run TestFuzzSeeds.
func TestFuzzSeeds(t *testing.T) {
	enc := fuzztest.KeysSeed // 0 for "\x00", 1 for 'a', 2 for 'b', 3 for 0xff, a space between keys
	stored := enc("0 1 10 11 12 2 21 3 33 330")
	fuzztest.Check(t, "FuzzKeyRange", []fuzztest.Seed{
		{Name: "single-key", Args: []any{stored, enc("11"), uint8(endNil)}},
		{Name: "empty-end", Args: []any{stored, enc("12"), uint8(endEmpty)}},
		{Name: "from-key", Args: []any{stored, enc("2"), uint8(endFromKey)}},
		{Name: "prefix", Args: []any{stored, enc("1 2"), uint8(endKey)}},
		{Name: "inverted", Args: []any{stored, enc("2 1"), uint8(endKey)}},
		{Name: "ff-prefix", Args: []any{stored, enc("3 0"), uint8(endKey)}},
	})
}
