package mvcc

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cairnkv/cairn/server/storage/backend"
)

// BenchmarkMaintenanceProbe measures what compaction and defragmentation
// cost a writer, without raft, WAL or gRPC: a store of CAIRN_PROBE_KEYS
// keys (default 200000) x 2 versions, a commit loop every 100 ms under a
// mutex standing for the member's applyMu (which puts also take, as the
// apply loop does), and an open-loop probe putting every 2 ms, each put in
// its own goroutine. It reports the probe's p99 and max in the windows
// before, during and after a compaction of every old revision and a defrag.
//
//	go test -run - -bench MaintenanceProbe -benchtime 1x ./server/storage/mvcc
func BenchmarkMaintenanceProbe(b *testing.B) {
	keys := 200000
	if v, err := strconv.Atoi(os.Getenv("CAIRN_PROBE_KEYS")); err == nil && v > 0 {
		keys = v
	}
	window := 3 * time.Second
	for range b.N {
		s, be, _ := newTestStore(b, StoreConfig{})
		m := &probedMember{s: s, be: be, stop: make(chan struct{})}
		m.load(keys)
		go m.commitLoop()
		m.measure(b, "compact", window, func() {
			done, err := s.Compact(s.Rev())
			if err != nil {
				b.Fatal(err)
			}
			<-done
		})
		m.measure(b, "defrag", window, func() {
			if err := be.Defrag(); err != nil {
				b.Fatal(err)
			}
		})
		close(m.stop)
	}
}

type probedMember struct {
	s       *Store
	be      backend.Backend
	applyMu sync.Mutex
	stop    chan struct{}
}

func (m *probedMember) load(keys int) {
	value := make([]byte, 256)
	for v := range 2 {
		for i := range keys {
			m.s.Put([]byte(fmt.Sprintf("key-%016d", i)), value, 0)
			if i%10000 == 9999 {
				m.be.Commit()
			}
		}
		_ = v
	}
	m.be.Commit()
}

func (m *probedMember) commitLoop() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.applyMu.Lock()
			if m.be.PendingWrites() > 0 {
				m.be.Commit()
			}
			m.applyMu.Unlock()
		}
	}
}

// probe puts every 2 ms for d and returns the latencies.
func (m *probedMember) probe(d time.Duration) []time.Duration {
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	value := make([]byte, 256)
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	end := time.After(d)
	for i := 0; ; i++ {
		select {
		case <-end:
			wg.Wait()
			return lat
		case <-t.C:
		}
		wg.Go(func() {
			start := time.Now()
			m.applyMu.Lock()
			m.s.Put([]byte(fmt.Sprintf("probe-%04d", i%1000)), value, 0)
			m.applyMu.Unlock()
			mu.Lock()
			lat = append(lat, time.Since(start))
			mu.Unlock()
		})
	}
}

// measure probes a window before, during op, and a window after.
func (m *probedMember) measure(b *testing.B, name string, window time.Duration, op func()) {
	report := func(phase string, lat []time.Duration) {
		slices.Sort(lat)
		p99 := lat[len(lat)*99/100]
		b.ReportMetric(float64(p99)/1e6, name+"-"+phase+"-p99-ms")
		b.ReportMetric(float64(lat[len(lat)-1])/1e6, name+"-"+phase+"-max-ms")
	}
	report("before", m.probe(window))
	done := make(chan struct{})
	start := time.Now()
	var during []time.Duration
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			during = append(during, m.probe(200*time.Millisecond)...)
		}
	})
	op()
	took := time.Since(start)
	close(done)
	wg.Wait()
	b.ReportMetric(took.Seconds(), name+"-took-s")
	report("during", during)
	report("after", m.probe(window))
}
