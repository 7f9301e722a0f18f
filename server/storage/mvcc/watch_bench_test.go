package mvcc

import (
	"fmt"
	"testing"
)

// BenchmarkWatchNotify measures a Put while n synced watchers watch n
// distinct keys; each Put changes one watched key, round robin, and a
// reader drains the stream. Compare with BenchmarkPut256B (no watchers).
func BenchmarkWatchNotify(b *testing.B) {
	for _, n := range []int{1, 100, 10000} {
		b.Run(fmt.Sprintf("watchers=%d", n), func(b *testing.B) {
			s, be, _ := newTestStore(b, StoreConfig{})
			ws := s.NewWatchStream()
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				for range ws.Chan() {
				}
			}()
			keys := make([][]byte, n)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf("key-%06d", i))
				if _, err := ws.Watch(AutoWatchID, keys[i], nil, 0); err != nil {
					b.Fatal(err)
				}
			}
			value := make([]byte, 256)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.Put(keys[i%n], value, 0)
				if i%commitEvery == commitEvery-1 {
					be.Commit()
				}
			}
			b.StopTimer()
			ws.Close()
			<-drained
		})
	}
}
