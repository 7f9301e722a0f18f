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

// BenchmarkWatchFanOut measures a Put while 1000 synced watchers, spread
// over 10 drained streams, all watch the key it changes: what a writer pays
// for a wide fan-out.
func BenchmarkWatchFanOut(b *testing.B) {
	const watchers, streams = 1000, 10
	s, be, _ := newTestStore(b, StoreConfig{})
	var drained []chan struct{}
	var wss []WatchStream
	for range streams {
		ws := s.NewWatchStream()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range ws.Chan() {
			}
		}()
		wss, drained = append(wss, ws), append(drained, done)
	}
	for i := range watchers {
		if _, err := wss[i%streams].Watch(AutoWatchID, []byte("key"), nil, 0); err != nil {
			b.Fatal(err)
		}
	}
	value := make([]byte, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Put([]byte("key"), value, 0)
		if i%commitEvery == commitEvery-1 {
			be.Commit()
		}
	}
	b.StopTimer()
	for i, ws := range wss {
		ws.Close()
		<-drained[i]
	}
}
