package concurrency_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/client/concurrency"
)

var isolations = []struct {
	name string
	iso  concurrency.Isolation
}{
	{"SerializableSnapshot", concurrency.SerializableSnapshot},
	{"Serializable", concurrency.Serializable},
	{"RepeatableReads", concurrency.RepeatableReads},
	{"ReadCommitted", concurrency.ReadCommitted},
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
					_, err := concurrency.NewSTM(c, func(s concurrency.STM) error {
						n, _ := strconv.Atoi(s.Get(key))
						s.Put(key, strconv.Itoa(n+1))
						return nil
					}, concurrency.WithIsolation(lvl.iso), concurrency.WithAbortContext(testCtx(t)))
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
		runs      map[concurrency.Isolation]int
		// snapshotB is what the first run reads of b after the
		// interference.
		firstB map[concurrency.Isolation]string
	}{
		{
			name: "read key changed", interfere: "a",
			runs:   map[concurrency.Isolation]int{concurrency.SerializableSnapshot: 2, concurrency.Serializable: 2, concurrency.RepeatableReads: 2, concurrency.ReadCommitted: 1},
			firstB: map[concurrency.Isolation]string{concurrency.SerializableSnapshot: "b0", concurrency.Serializable: "b0", concurrency.RepeatableReads: "b0", concurrency.ReadCommitted: "b0"},
		},
		{
			name: "written key changed", interfere: "w",
			runs:   map[concurrency.Isolation]int{concurrency.SerializableSnapshot: 2, concurrency.Serializable: 1, concurrency.RepeatableReads: 1, concurrency.ReadCommitted: 1},
			firstB: map[concurrency.Isolation]string{concurrency.SerializableSnapshot: "b0", concurrency.Serializable: "b0", concurrency.RepeatableReads: "b0", concurrency.ReadCommitted: "b0"},
		},
		{
			name: "key read later changed", interfere: "b",
			runs:   map[concurrency.Isolation]int{concurrency.SerializableSnapshot: 2, concurrency.Serializable: 2, concurrency.RepeatableReads: 1, concurrency.ReadCommitted: 1},
			firstB: map[concurrency.Isolation]string{concurrency.SerializableSnapshot: "b0", concurrency.Serializable: "b0", concurrency.RepeatableReads: "outside", concurrency.ReadCommitted: "outside"},
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
				_, err := concurrency.NewSTM(c, func(s concurrency.STM) error {
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
				}, concurrency.WithIsolation(lvl.iso), concurrency.WithAbortContext(ctx))
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
			_, err := concurrency.NewSTM(c, func(s concurrency.STM) error {
				s.Put(key, "mine")
				if got := s.Get(key); got != "mine" {
					return fmt.Errorf("Get after Put: %q", got)
				}
				s.Del(key)
				if got := s.Get(key); got != "" {
					return fmt.Errorf("Get after Del: %q", got)
				}
				return nil
			}, concurrency.WithIsolation(lvl.iso), concurrency.WithPrefetch(key))
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
			_, err := concurrency.NewSTM(c, func(s concurrency.STM) error {
				if got := s.Rev("rev/k"); got != put.Header.Revision {
					return fmt.Errorf("Rev %d, want %d", got, put.Header.Revision)
				}
				if got := s.Rev("rev/missing"); got != 0 {
					return fmt.Errorf("Rev of a missing key %d, want 0", got)
				}
				return nil
			}, concurrency.WithIsolation(lvl.iso))
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSTMAborts(t *testing.T) {
	c := newClient(t)
	errApply := errors.New("apply says no")
	if _, err := concurrency.NewSTM(c, func(concurrency.STM) error { return errApply }); !errors.Is(err, errApply) {
		t.Fatalf("apply's error: got %v", err)
	}
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	_, err := concurrency.NewSTM(c, func(s concurrency.STM) error { s.Get("abort/k"); return nil }, concurrency.WithAbortContext(ctx))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled abort context: got %v, want context.Canceled", err)
	}
	resp, err := c.Get(testCtx(t), "abort/", client.WithPrefix())
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("aborted STM wrote %v (%v)", resp.GetKvs(), err)
	}
}
