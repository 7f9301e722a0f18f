package mvcc

import (
	"context"
	"fmt"
	"testing"
)

// commitEvery mimics the member, which commits the backend in batches.
const commitEvery = 10000

func BenchmarkPut256B(b *testing.B) {
	s, be, _ := newTestStore(b, StoreConfig{})
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key-%06d", i))
	}
	value := make([]byte, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Put(keys[i%len(keys)], value, 0)
		if i%commitEvery == commitEvery-1 {
			be.Commit()
		}
	}
}

func BenchmarkRangeSingleKey(b *testing.B) {
	s, be, _ := newTestStore(b, StoreConfig{})
	s.Put([]byte("foo"), make([]byte, 256), 0)
	be.Commit()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Range(ctx, []byte("foo"), nil, RangeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRange1000Keys(b *testing.B) {
	s, be, _ := newTestStore(b, StoreConfig{})
	txn := s.Write()
	for i := range 1000 {
		txn.Put([]byte(fmt.Sprintf("key-%06d", i)), make([]byte, 256), 0)
	}
	txn.End()
	be.Commit()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := s.Range(ctx, []byte("key-"), []byte("key."), RangeOptions{})
		if err != nil || len(res.KVs) != 1000 {
			b.Fatalf("%v, %d KVs", err, len(res.KVs))
		}
	}
}
