package mvcc

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
)

// TestConcurrentReadersWriterAndCompaction runs readers against a writer and
// repeated compactions; every read must be a consistent snapshot: each value
// names its own mod revision, at or before the read's revision.
func TestConcurrentReadersWriterAndCompaction(t *testing.T) {
	s, _, _ := newTestStore(t, StoreConfig{CompactionBatchLimit: 7, CompactionSleepInterval: 1})
	const writes = 400
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errc := make(chan error, 8)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := checkSnapshot(s); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	var dones []<-chan struct{}
	for i := range writes {
		txn := s.Write()
		rev := txn.Rev() + 1
		txn.Put([]byte(fmt.Sprintf("k%02d", i%10)), []byte(strconv.FormatInt(rev, 10)), 0)
		txn.End()
		if i%50 == 49 {
			done, err := s.Compact(rev - 5)
			if err != nil {
				t.Fatalf("Compact(%d): %v", rev-5, err)
			}
			dones = append(dones, done)
		}
	}
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for _, done := range dones {
		waitCompaction(t, done)
	}
	if res := mustRange(t, s, "", "\x00", RangeOptions{}); res.Count != 10 {
		t.Fatalf("%d keys at the end, want 10", res.Count)
	}
}

func checkSnapshot(s *Store) error {
	txn := s.Read()
	defer txn.End()
	res, err := txn.Range(context.Background(), nil, []byte{0}, RangeOptions{})
	if err != nil {
		return err
	}
	for _, kv := range res.KVs {
		if kv.ModRevision > res.Rev || string(kv.Value) != strconv.FormatInt(kv.ModRevision, 10) {
			return fmt.Errorf("read at %d saw %s=%s mod %d", res.Rev, kv.Key, kv.Value, kv.ModRevision)
		}
	}
	return nil
}
