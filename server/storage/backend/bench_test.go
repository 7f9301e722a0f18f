package backend

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

func benchKey(i int) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, uint64(i))
	return k
}

// BenchmarkBatchTxPut puts 100-byte values, one Lock/Unlock per put, and
// commits every 10000 puts, the member's pattern.
func BenchmarkBatchTxPut(b *testing.B) {
	for _, fsync := range []bool{true, false} {
		b.Run(fmt.Sprintf("fsync=%v", fsync), func(b *testing.B) {
			be, err := Open(Config{Path: filepath.Join(b.TempDir(), "db"), UnsafeNoFsync: !fsync})
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			value := make([]byte, 100)
			tx := be.BatchTx()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tx.Lock()
				tx.UnsafePut(BucketKey, benchKey(i), value)
				tx.Unlock()
				if i%10000 == 9999 {
					be.Commit()
				}
			}
		})
	}
}

// BenchmarkReadTxPointRead reads single keys among 100000 committed ones,
// with and without 10000 released writes to overlay.
func BenchmarkReadTxPointRead(b *testing.B) {
	const keys = 100000
	for _, buffered := range []int{0, 10000} {
		b.Run(fmt.Sprintf("buffered=%d", buffered), func(b *testing.B) {
			be, _ := NewTmpBackend(b)
			fillBench(be, 0, keys)
			be.Commit()
			fillBench(be, keys, keys+buffered)
			rt := be.ReadTx()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rt.RLock()
				k, _ := rt.UnsafeRange(BucketKey, benchKey(i*7919%(keys+buffered)), nil, 0)
				rt.RUnlock()
				if len(k) != 1 {
					b.Fatal("key not found")
				}
			}
		})
	}
}

// BenchmarkReadTxParallelWithWriter measures point reads from all CPUs while
// one goroutine keeps writing and committing.
func BenchmarkReadTxParallelWithWriter(b *testing.B) {
	const keys = 100000
	be, _ := NewTmpBackend(b)
	fillBench(be, 0, keys)
	be.Commit()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tx, value := be.BatchTx(), make([]byte, 100)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tx.Lock()
			tx.UnsafePut(BucketKey, benchKey(keys+i), value)
			tx.Unlock()
			if i%10000 == 9999 {
				be.Commit()
			}
		}
	}()
	rt := be.ReadTx()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			rt.RLock()
			rt.UnsafeRange(BucketKey, benchKey(i*7919%keys), nil, 0)
			rt.RUnlock()
		}
	})
	b.StopTimer()
	close(stop)
	wg.Wait()
}

func fillBench(be Backend, from, to int) {
	value := make([]byte, 100)
	tx := be.BatchTx()
	tx.Lock()
	for i := from; i < to; i++ {
		tx.UnsafePut(BucketKey, benchKey(i), value)
	}
	tx.Unlock()
}
