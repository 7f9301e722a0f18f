package concurrency

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/cairnkv/cairn/client"
)

var isolations = []struct {
	name string
	iso  Isolation
}{
	{"SerializableSnapshot", SerializableSnapshot},
	{"Serializable", Serializable},
	{"RepeatableReads", RepeatableReads},
	{"ReadCommitted", ReadCommitted},
}

// TestSTMCounter increments one counter from several goroutines: every
// level but ReadCommitted detects the read-modify-write conflicts.
func TestSTMCounter(t *testing.T) {
	const workers = 5
	for _, lvl := range isolations[:3] {
		t.Run(lvl.name, func(t *testing.T) {
			c := newClient(t)
			key := "counter/" + lvl.name
			if _, err := c.Delete(testCtx(t), key); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errc := make(chan error, workers)
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := NewSTM(c, func(s STM) error {
						n, _ := strconv.Atoi(s.Get(key))
						s.Put(key, strconv.Itoa(n+1))
						return nil
					}, WithIsolation(lvl.iso), WithAbortContext(testCtx(t)))
					errc <- err
				}()
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				if err != nil {
					t.Fatal(err)
				}
			}
			resp, err := c.Get(testCtx(t), key)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(resp.Kvs[0].Value); got != strconv.Itoa(workers) {
				t.Fatalf("counter %s, want %d", got, workers)
			}
		})
	}
}

// TestSTMConflicts interferes once, during the first run, and counts the
// runs each isolation level needs.
func TestSTMConflicts(t *testing.T) {
	for _, tc := range []struct {
		name string
		// interfere writes to this key between the STM's first read and its
		// commit; reads and writes are the STM's own.
		interfere string
		runs      map[Isolation]int
		// snapshotB is what the first run reads of b after the
		// interference.
		firstB map[Isolation]string
	}{
		{
			name: "read key changed", interfere: "a",
			runs:   map[Isolation]int{SerializableSnapshot: 2, Serializable: 2, RepeatableReads: 2, ReadCommitted: 1},
			firstB: map[Isolation]string{SerializableSnapshot: "b0", Serializable: "b0", RepeatableReads: "b0", ReadCommitted: "b0"},
		},
		{
			name: "written key changed", interfere: "w",
			runs:   map[Isolation]int{SerializableSnapshot: 2, Serializable: 1, RepeatableReads: 1, ReadCommitted: 1},
			firstB: map[Isolation]string{SerializableSnapshot: "b0", Serializable: "b0", RepeatableReads: "b0", ReadCommitted: "b0"},
		},
		{
			name: "key read later changed", interfere: "b",
			runs:   map[Isolation]int{SerializableSnapshot: 2, Serializable: 2, RepeatableReads: 1, ReadCommitted: 1},
			firstB: map[Isolation]string{SerializableSnapshot: "b0", Serializable: "b0", RepeatableReads: "outside", ReadCommitted: "outside"},
		},
	} {
		for _, lvl := range isolations {
			t.Run(tc.name+"/"+lvl.name, func(t *testing.T) {
				ctx := testCtx(t)
				c := newClient(t)
				pfx := fmt.Sprintf("conflict/%s/%s/", tc.name, lvl.name)
				for _, k := range []string{"a", "b", "w"} {
					if _, err := c.Put(ctx, pfx+k, k+"0"); err != nil {
						t.Fatal(err)
					}
				}
				runs, firstB := 0, ""
				_, err := NewSTM(c, func(s STM) error {
					runs++
					s.Get(pfx + "a")
					if runs == 1 {
						if _, err := c.Put(ctx, pfx+tc.interfere, "outside"); err != nil {
							return err
						}
					}
					b := s.Get(pfx + "b")
					if runs == 1 {
						firstB = b
					}
					s.Put(pfx+"w", "stm")
					return nil
				}, WithIsolation(lvl.iso), WithAbortContext(ctx))
				if err != nil {
					t.Fatal(err)
				}
				if runs != tc.runs[lvl.iso] {
					t.Errorf("%d runs, want %d", runs, tc.runs[lvl.iso])
				}
				if firstB != tc.firstB[lvl.iso] {
					t.Errorf("first run read b = %q, want %q", firstB, tc.firstB[lvl.iso])
				}
			})
		}
	}
}

func TestSTMReadsOwnWrites(t *testing.T) {
	for _, lvl := range isolations {
		t.Run(lvl.name, func(t *testing.T) {
			c := newClient(t)
			key := "own/" + lvl.name
			_, err := NewSTM(c, func(s STM) error {
				s.Put(key, "mine")
				if got := s.Get(key); got != "mine" {
					return fmt.Errorf("Get after Put: %q", got)
				}
				s.Del(key)
				if got := s.Get(key); got != "" {
					return fmt.Errorf("Get after Del: %q", got)
				}
				return nil
			}, WithIsolation(lvl.iso), WithPrefetch(key))
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSTMRev(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t)
	put, err := c.Put(ctx, "rev/k", "v")
	if err != nil {
		t.Fatal(err)
	}
	for _, lvl := range isolations {
		t.Run(lvl.name, func(t *testing.T) {
			_, err := NewSTM(c, func(s STM) error {
				if got := s.Rev("rev/k"); got != put.Header.Revision {
					return fmt.Errorf("Rev %d, want %d", got, put.Header.Revision)
				}
				if got := s.Rev("rev/missing"); got != 0 {
					return fmt.Errorf("Rev of a missing key %d, want 0", got)
				}
				return nil
			}, WithIsolation(lvl.iso))
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSTMAborts(t *testing.T) {
	c := newClient(t)
	errApply := errors.New("apply says no")
	if _, err := NewSTM(c, func(STM) error { return errApply }); !errors.Is(err, errApply) {
		t.Fatalf("apply's error: got %v", err)
	}
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	_, err := NewSTM(c, func(s STM) error { s.Get("abort/k"); return nil }, WithAbortContext(ctx))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled abort context: got %v, want context.Canceled", err)
	}
	resp, err := c.Get(testCtx(t), "abort/", client.WithPrefix())
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("aborted STM wrote %v (%v)", resp.GetKvs(), err)
	}
}
