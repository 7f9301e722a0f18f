package mvcc

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/server/storage/backend"
)

// randomHistory writes n random operations: puts with and without leases,
// single and range deletes, multi-op txns (sub revisions) and compactions.
// It returns the leased live keys as the lessor would hold them.
func randomHistory(t *testing.T, s *Store, rng *rand.Rand, n int) []LeasedKey {
	leases := map[string]int64{}
	key := func() string { return fmt.Sprintf("k%02d", rng.Intn(40)) }
	put := func(w TxnWrite, k string) {
		lease := int64(0)
		if rng.Intn(3) == 0 {
			lease = int64(1 + rng.Intn(3))
		}
		w.Put([]byte(k), []byte(fmt.Sprint(rng.Int())), lease)
		if lease != 0 {
			leases[k] = lease
		} else {
			delete(leases, k)
		}
	}
	del := func(w TxnWrite, k, end string) {
		w.DeleteRange([]byte(k), rangeEnd(end))
		for lk := range leases {
			if lk == k || (end != "" && lk >= k && lk < end) {
				delete(leases, lk)
			}
		}
	}
	for range n {
		w := s.Write()
		switch op := rng.Intn(10); {
		case op < 5:
			put(w, key())
		case op < 7:
			del(w, key(), "")
		case op < 8:
			a, b := key(), key()
			del(w, min(a, b), max(a, b))
		default:
			for range 1 + rng.Intn(4) {
				if rng.Intn(3) == 0 {
					del(w, key(), "")
				} else {
					put(w, key())
				}
			}
		}
		w.End()
		if rng.Intn(40) == 0 && s.Rev() > s.FirstRev()+1 {
			rev := s.FirstRev() + 1 + rng.Int63n(s.Rev()-s.FirstRev())
			waitCompaction(t, mustCompact(t, s, rev))
		}
	}
	var leased []LeasedKey
	for k, id := range leases {
		leased = append(leased, LeasedKey{Key: []byte(k), Lease: id})
	}
	slices.SortFunc(leased, func(a, b LeasedKey) int { return strings.Compare(string(a.Key), string(b.Key)) })
	return leased
}

// exactIndexDump lists every key's generations, for comparing two indexes.
func exactIndexDump(s *Store) []string {
	var out []string
	s.index.tree.Ascend(func(ki *keyIndex) bool {
		line := ki.key + ":"
		for i := range ki.numGenerations() {
			g := ki.generation(i)
			line += fmt.Sprintf(" {c%d v%d %v}", g.created, g.ver, g.revs)
		}
		out = append(out, line)
		return true
	})
	return out
}

type indexState struct {
	index     []string
	leased    []LeasedKey
	rev, comp int64
	hash      uint32
}

func indexStateOf(t *testing.T, s *Store) indexState {
	t.Helper()
	h, _, err := s.HashByRev(0)
	if err != nil {
		t.Fatal(err)
	}
	return indexState{index: exactIndexDump(s), leased: s.TakeRestoredLeases(), rev: s.Rev(), comp: s.CompactRev(), hash: h.Hash}
}

// closeAndCheckpoint stops s, commits and closes b, and writes the
// checkpoint as the member does on a clean stop.
func closeAndCheckpoint(t *testing.T, s *Store, b backend.Backend, ckpt string, leased []LeasedKey) {
	t.Helper()
	s.Close()
	b.Commit()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteIndexCheckpoint(ckpt, b.CommitID(), leased); err != nil {
		t.Fatal(err)
	}
}

// stateAtOpen opens the store on path (loading ckpt if given), takes its
// state and closes it again.
func stateAtOpen(t *testing.T, path, ckpt string) indexState {
	t.Helper()
	b, err := backend.Open(backend.Config{Path: path, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := New(nil, b, StoreConfig{CompactionBatchLimit: 3, CompactionSleepInterval: 1, IndexCheckpoint: ckpt})
	defer s.Close()
	return indexStateOf(t, s)
}

// TestIndexCheckpointEqualsRebuild: on randomized histories, the index,
// the leased keys, the revisions and HashKV loaded from a checkpoint are
// the rebuild's, and the checkpoint is used once.
func TestIndexCheckpointEqualsRebuild(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			dir := t.TempDir()
			path, ckpt := filepath.Join(dir, "db"), filepath.Join(dir, "index")
			b, err := backend.Open(backend.Config{Path: path, UnsafeNoFsync: true})
			if err != nil {
				t.Fatal(err)
			}
			s := New(nil, b, testConfig)
			leased := randomHistory(t, s, rng, 300+rng.Intn(300))
			closeAndCheckpoint(t, s, b, ckpt, leased)

			got := stateAtOpen(t, path, ckpt)
			if _, err := os.Stat(ckpt); !os.IsNotExist(err) {
				t.Fatalf("checkpoint still there after loading: %v", err)
			}
			rebuilt := stateAtOpen(t, path, "")
			if len(rebuilt.index) == 0 {
				t.Fatal("empty history")
			}
			if !reflect.DeepEqual(got, rebuilt) {
				t.Fatalf("from the checkpoint:\n%+v\nrebuilt:\n%+v", got, rebuilt)
			}
		})
	}
}

// TestIndexCheckpointUnusable: a stale, corrupt, truncated or foreign
// checkpoint is ignored (and removed) and the index rebuilt.
func TestIndexCheckpointUnusable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, path, ckpt string)
	}{
		{"stale: db written after", func(t *testing.T, path, _ string) {
			b, err := backend.Open(backend.Config{Path: path, UnsafeNoFsync: true})
			if err != nil {
				t.Fatal(err)
			}
			s := New(nil, b, testConfig)
			s.Put([]byte("late"), []byte("v"), 0)
			s.Close()
			b.Close()
		}},
		{"flipped byte", func(t *testing.T, _, ckpt string) {
			rewrite(t, ckpt, func(d []byte) []byte { d[len(d)/2] ^= 1; return d })
		}},
		{"truncated", func(t *testing.T, _, ckpt string) { rewrite(t, ckpt, func(d []byte) []byte { return d[:len(d)-7] }) }},
		{"empty", func(t *testing.T, _, ckpt string) { rewrite(t, ckpt, func([]byte) []byte { return nil }) }},
		{"not a checkpoint", func(t *testing.T, _, ckpt string) {
			rewrite(t, ckpt, func([]byte) []byte { return []byte("hello, world") })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, ckpt := filepath.Join(dir, "db"), filepath.Join(dir, "index")
			b, err := backend.Open(backend.Config{Path: path, UnsafeNoFsync: true})
			if err != nil {
				t.Fatal(err)
			}
			s := New(nil, b, testConfig)
			leased := randomHistory(t, s, rand.New(rand.NewSource(42)), 200)
			closeAndCheckpoint(t, s, b, ckpt, leased)
			tc.spoil(t, path, ckpt)

			got := stateAtOpen(t, path, ckpt)
			if _, err := os.Stat(ckpt); !os.IsNotExist(err) {
				t.Fatalf("unusable checkpoint not removed: %v", err)
			}
			if want := stateAtOpen(t, path, ""); !reflect.DeepEqual(got, want) {
				t.Fatalf("with the spoilt checkpoint:\n%+v\nrebuilt:\n%+v", got, want)
			}
		})
	}
}

// TestIndexCheckpointNotWrittenMidCompaction: a compaction interrupted by
// Close leaves the backend behind the index, so no checkpoint is written.
func TestIndexCheckpointNotWrittenMidCompaction(t *testing.T) {
	dir := t.TempDir()
	path, ckpt := filepath.Join(dir, "db"), filepath.Join(dir, "index")
	b, err := backend.Open(backend.Config{Path: path, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := New(nil, b, StoreConfig{CompactionBatchLimit: 1, CompactionSleepInterval: 1 << 40})
	for i := range 10 {
		s.Put([]byte("k"), []byte{byte(i)}, 0)
	}
	mustCompact(t, s, 11)
	s.Close()
	b.Commit()
	if err := s.WriteIndexCheckpoint(ckpt, b.CommitID(), nil); err == nil {
		t.Fatal("checkpoint written while a compaction was half done")
	}
	if _, err := os.Stat(ckpt); !os.IsNotExist(err) {
		t.Fatalf("checkpoint file exists: %v", err)
	}
}

func rewrite(t *testing.T, path string, f func([]byte) []byte) {
	t.Helper()
	d, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, f(d), 0o600); err != nil {
		t.Fatal(err)
	}
}
