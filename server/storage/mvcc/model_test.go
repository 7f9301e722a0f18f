package mvcc

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/server/errs"
)

// modelKV is what the model knows about a live key.
type modelKV struct {
	value                   string
	create, mod, ver, lease int64
}

// model keeps the whole key space at every revision: states[rev].
type model struct {
	states    []map[string]modelKV
	compacted int64 // -1: never
}

func newModel() *model {
	return &model{states: []map[string]modelKV{nil, {}}, compacted: -1}
}

func (m *model) rev() int64 { return int64(len(m.states) - 1) }

// modelOp is one operation of a transaction.
type modelOp struct {
	put      bool
	key, end string // end "" = single key
	value    string
	lease    int64
}

func (op modelOp) covers(k string) bool {
	switch {
	case op.end == "":
		return k == op.key
	case op.end == "\x00":
		return k >= op.key
	}
	return k >= op.key && k < op.end
}

// apply runs a transaction on the model the way etcd defines it.
func (m *model) apply(ops []modelOp) {
	rev := m.rev() + 1
	next := make(map[string]modelKV, len(m.states[rev-1]))
	for k, v := range m.states[rev-1] {
		next[k] = v
	}
	changed := false
	for _, op := range ops {
		if op.put {
			kv, ok := next[op.key]
			if !ok {
				kv = modelKV{create: rev}
			}
			kv.value, kv.mod, kv.ver, kv.lease = op.value, rev, kv.ver+1, op.lease
			next[op.key] = kv
			changed = true
			continue
		}
		for k := range next {
			if op.covers(k) {
				delete(next, k)
				changed = true
			}
		}
	}
	if changed {
		m.states = append(m.states, next)
	}
}

func (m *model) rangeAt(rev int64, key, end string) []string {
	keys := []string{}
	for k := range m.states[rev] {
		if (modelOp{key: key, end: end}).covers(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := []string{}
	for _, k := range keys {
		kv := m.states[rev][k]
		out = append(out, fmt.Sprintf("%s=%s@%d/%d/v%d/l%d", k, kv.value, kv.create, kv.mod, kv.ver, kv.lease))
	}
	return out
}

var modelKeys = []string{"a", "a/1", "a/2", "b", "c", "c/x", "d", "e"}

func randomOp(rnd *rand.Rand) modelOp {
	key := modelKeys[rnd.Intn(len(modelKeys))]
	switch rnd.Intn(6) {
	case 0:
		return modelOp{key: key} // delete one key
	case 1:
		end := modelKeys[rnd.Intn(len(modelKeys))]
		if rnd.Intn(4) == 0 {
			end = "\x00"
		}
		return modelOp{key: key, end: end}
	default:
		return modelOp{put: true, key: key, value: fmt.Sprint(rnd.Intn(1000)), lease: int64(rnd.Intn(3))}
	}
}

func randomRange(rnd *rand.Rand) (key, end string) {
	key = modelKeys[rnd.Intn(len(modelKeys))]
	switch rnd.Intn(4) {
	case 0:
		return key, ""
	case 1:
		return key, "\x00"
	case 2:
		return "", "\x00"
	}
	return key, modelKeys[rnd.Intn(len(modelKeys))]
}

func TestStoreAgainstModel(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runModel(t, seed, 300) })
	}
}

func runModel(t *testing.T, seed int64, steps int) {
	rnd := rand.New(rand.NewSource(seed))
	s, b, path := newTestStore(t, testConfig)
	m := newModel()
	var pending []<-chan struct{}
	for step := range steps {
		switch r := rnd.Intn(100); {
		case r < 8 && m.rev() > max(m.compacted, 1):
			rev := max(m.compacted+1, 2) + rnd.Int63n(m.rev()-max(m.compacted+1, 2)+1)
			done, err := s.Compact(rev)
			if err != nil {
				t.Fatalf("step %d: Compact(%d): %v", step, rev, err)
			}
			m.compacted = rev
			pending = append(pending, done)
		case r < 10:
			for _, done := range pending {
				waitCompaction(t, done)
			}
			pending = nil
			before, _, _ := s.HashByRev(0)
			s, b = reopen(t, s, b, path, testConfig)
			if after, _, _ := s.HashByRev(0); after != before {
				t.Fatalf("step %d: hash changed across reopen: %+v -> %+v", step, before, after)
			}
		default:
			ops := make([]modelOp, 1+rnd.Intn(3))
			for i := range ops {
				ops[i] = randomOp(rnd)
			}
			applyOps(s, ops)
			m.apply(ops)
		}
		checkAgainstModel(t, rnd, step, s, m)
	}
	for _, done := range pending {
		waitCompaction(t, done)
	}
	for rev := max(m.compacted, 1); rev <= m.rev(); rev++ {
		checkRange(t, -1, s, m, rev, "", "\x00")
	}
}

func applyOps(s *Store, ops []modelOp) {
	txn := s.Write()
	defer txn.End()
	for _, op := range ops {
		if op.put {
			txn.Put([]byte(op.key), []byte(op.value), op.lease)
		} else {
			txn.DeleteRange([]byte(op.key), rangeEnd(op.end))
		}
	}
}

func checkAgainstModel(t *testing.T, rnd *rand.Rand, step int, s *Store, m *model) {
	t.Helper()
	if s.Rev() != m.rev() || s.FirstRev() != max(m.compacted, 0) {
		t.Fatalf("step %d: store at rev %d first %d, model at %d first %d", step, s.Rev(), s.FirstRev(), m.rev(), m.compacted)
	}
	for range 3 {
		low := max(m.compacted, 1)
		rev := low + rnd.Int63n(m.rev()-low+1)
		key, end := randomRange(rnd)
		checkRange(t, step, s, m, rev, key, end)
	}
	if m.compacted > 1 {
		_, err := s.Range(context.Background(), []byte("a"), nil, RangeOptions{Rev: m.compacted - 1})
		if !errors.Is(err, errs.ErrCompacted) {
			t.Fatalf("step %d: read below compaction: %v", step, err)
		}
	}
}

func checkRange(t *testing.T, step int, s *Store, m *model, rev int64, key, end string) {
	t.Helper()
	res, err := s.Range(context.Background(), []byte(key), rangeEnd(end), RangeOptions{Rev: rev})
	if err != nil {
		t.Fatalf("step %d: Range(%q,%q)@%d: %v", step, key, end, rev, err)
	}
	want := m.rangeAt(rev, key, end)
	if got := kvString(res.KVs); !reflect.DeepEqual(got, want) || res.Count != len(want) {
		t.Fatalf("step %d: Range(%q,%q)@%d =\n  %s (count %d)\nwant\n  %s",
			step, key, end, rev, strings.Join(got, " "), res.Count, strings.Join(want, " "))
	}
}
