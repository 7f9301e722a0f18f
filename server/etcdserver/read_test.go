package etcdserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/server/errs"
)

// TestLinearizableReadsSeeAcknowledgedWrites runs writers and readers
// together: a linearizable read must reflect every write acknowledged
// before the read started, both in its header revision and in the value
// of the key written.
func TestLinearizableReadsSeeAcknowledgedWrites(t *testing.T) {
	s := startServer(t, testConfig(t.TempDir()))
	const (
		writers         = 4
		readers         = 8
		writesPerWriter = 60
	)
	var (
		ackedRev  atomic.Int64          // highest revision of an acknowledged put
		ackedSeq  [writers]atomic.Int64 // per writer: last acknowledged value
		writersWG sync.WaitGroup        // writers
		readersWG sync.WaitGroup        // readers
		done      = make(chan struct{}) // closed when the writers are done
		errc      = make(chan error, writers+readers)
		ctx       = testCtx(t)
		reads     atomic.Int64
	)
	for w := range writers {
		writersWG.Add(1)
		go func() {
			defer writersWG.Done()
			k := []byte(fmt.Sprintf("w%d", w))
			for i := 1; i <= writesPerWriter; i++ {
				resp, err := s.KV().Put(ctx, &pb.PutRequest{Key: k, Value: []byte(strconv.Itoa(i))})
				if err != nil {
					errc <- fmt.Errorf("writer %d put %d: %w", w, i, err)
					return
				}
				ackedSeq[w].Store(int64(i))
				for rev := resp.GetHeader().GetRevision(); ; {
					cur := ackedRev.Load()
					if rev <= cur || ackedRev.CompareAndSwap(cur, rev) {
						break
					}
				}
			}
		}()
	}
	for r := range readers {
		readersWG.Add(1)
		go func() {
			defer readersWG.Done()
			for n := 0; ; n++ {
				select {
				case <-done:
					return
				default:
				}
				w := (r + n) % writers
				minRev, minSeq := ackedRev.Load(), ackedSeq[w].Load()
				resp, err := s.KV().Range(ctx, &pb.RangeRequest{Key: []byte(fmt.Sprintf("w%d", w))})
				if err != nil {
					errc <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				reads.Add(1)
				if got := resp.GetHeader().GetRevision(); got < minRev {
					errc <- fmt.Errorf("reader %d: read at revision %d, a write at %d was acknowledged before it began", r, got, minRev)
					return
				}
				var seq int64
				if kvs := resp.GetKvs(); len(kvs) == 1 {
					seq, _ = strconv.ParseInt(string(kvs[0].GetValue()), 10, 64)
				}
				if seq < minSeq {
					errc <- fmt.Errorf("reader %d: w%d = %d, but %d was acknowledged before the read began", r, w, seq, minSeq)
					return
				}
			}
		}()
	}
	writersWG.Wait()
	close(done)
	readersWG.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if reads.Load() == 0 {
		t.Error("no read completed")
	}
}

// TestConcurrentLinearizableReads fires many barrier reads at once (they
// share ReadIndex rounds) mixed with the other barrier users: all complete.
func TestConcurrentLinearizableReads(t *testing.T) {
	s := startServer(t, testConfig(t.TempDir()))
	want := mustPut(t, s, "k", "v").GetHeader().GetRevision()
	ctx := testCtx(t)
	const n = 300
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch i % 3 {
			case 0:
				resp, err := s.KV().Range(ctx, &pb.RangeRequest{Key: []byte("k")})
				if err == nil && (len(resp.GetKvs()) != 1 || resp.GetHeader().GetRevision() < want) {
					err = fmt.Errorf("range = %v at %d", resp.GetKvs(), resp.GetHeader().GetRevision())
				}
				errc <- err
			case 1:
				_, err := s.KV().Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("k")}}}}})
				errc <- err
			default:
				errc <- s.LinearizableReadCheck(ctx)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestLinearizableReadCheck(t *testing.T) {
	s := startServer(t, testConfig(t.TempDir()))
	for i := range 3 {
		if err := s.LinearizableReadCheck(testCtx(t)); err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
	}
	if err := s.SerializableReadCheck(testCtx(t)); err != nil {
		t.Fatalf("SerializableReadCheck: %v", err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	// A caller that gave up gets its context's error, never a hang.
	if err := s.LinearizableReadCheck(canceled); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("check with a canceled context = %v", err)
	}
}

// stoppedErr reports whether err is what a request cut off by Stop may
// return.
func stoppedErr(err error) bool {
	return errors.Is(err, errs.ErrStopped) || errors.Is(err, errs.ErrCanceled) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// TestStopWithRequestsInFlight stops the member while writers and readers
// hammer it: every request returns, and the ones cut off return
// errs.ErrStopped (or a context error).
func TestStopWithRequestsInFlight(t *testing.T) {
	s := startServer(t, testConfig(t.TempDir()))
	ctx := testCtx(t)
	const workers = 16
	var (
		wg   sync.WaitGroup
		ops  atomic.Int64
		errc = make(chan error, workers)
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				// Requests begun after Stop are TestRequestsAfterStop's;
				// this test is about the ones Stop cuts off.
				select {
				case <-s.StopNotify():
					return
				default:
				}
				var err error
				if w%2 == 0 {
					_, err = s.KV().Put(ctx, &pb.PutRequest{Key: []byte(fmt.Sprintf("k%d", w)), Value: []byte(strconv.Itoa(i))})
				} else {
					_, err = s.KV().Range(ctx, &pb.RangeRequest{Key: []byte(fmt.Sprintf("k%d", w-1))})
				}
				if err != nil {
					errc <- err
					return
				}
				ops.Add(1)
			}
		}()
	}
	waitFor(t, "requests served", func() bool { return ops.Load() >= 200 })
	stopped := make(chan struct{})
	go func() {
		s.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(opTimeout):
		t.Fatal("Stop hangs with requests in flight")
	}
	returned := make(chan struct{})
	go func() {
		wg.Wait()
		close(returned)
	}()
	// Cut-off requests must not wait out the request timeout.
	select {
	case <-returned:
	case <-time.After(2 * time.Second):
		t.Error("requests still blocked 2s after Stop returned")
		<-returned // they give up at the request timeout
	}
	close(errc)
	for err := range errc {
		if !stoppedErr(err) {
			t.Errorf("request cut off by Stop returned %v, want %v or a context error", err, errs.ErrStopped)
		}
	}
}

// TestRequestsAfterStop: a stopped member refuses requests with
// errs.ErrStopped at once.
func TestRequestsAfterStop(t *testing.T) {
	s := startServer(t, testConfig(t.TempDir()))
	mustPut(t, s, "k", "v")
	s.Stop()
	ctx := testCtx(t)
	tests := []struct {
		name string
		call func() error
	}{
		{"linearizable range", func() error { _, err := s.KV().Range(ctx, &pb.RangeRequest{Key: []byte("k")}); return err }},
		{"read check", func() error { return s.LinearizableReadCheck(ctx) }},
		{"put", func() error {
			_, err := s.KV().Put(ctx, &pb.PutRequest{Key: []byte("k"), Value: []byte("v")})
			return err
		}},
		{"delete", func() error { _, err := s.KV().DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("k")}); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			errc := make(chan error, 1)
			go func() { errc <- tt.call() }()
			select {
			case err := <-errc:
				if !errors.Is(err, errs.ErrStopped) {
					t.Errorf("err = %v, want %v", err, errs.ErrStopped)
				}
			case <-time.After(2 * time.Second):
				t.Errorf("request to a stopped member still blocked after 2s")
				t.Logf("it returned %v eventually", <-errc)
			}
		})
	}
}
