package etcdserver

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// A follower forwards every keepalive it gets to the leader, many at once
// under load; the connections of one wave must serve the next instead of
// being closed and dialed again (Go's default keeps two per host).
func TestPeerHTTPClientReusesConnectionsOfConcurrentRequests(t *testing.T) {
	const concurrent = 50
	var opened atomic.Int64
	release := make(chan struct{})
	var arrived sync.WaitGroup
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release // keep the wave's requests in flight together
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	hc := (&Config{}).newPeerHTTPClient()
	defer hc.CloseIdleConnections()

	wave := func() {
		t.Helper()
		release = make(chan struct{})
		arrived.Add(concurrent)
		var done sync.WaitGroup
		for range concurrent {
			done.Add(1)
			go func() {
				defer done.Done()
				resp, err := hc.Post(srv.URL, protobufType, nil)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			}()
		}
		arrived.Wait()
		close(release)
		done.Wait()
	}
	wave()
	first := opened.Load()
	wave()
	if again := opened.Load() - first; again != 0 {
		t.Errorf("the second wave of %d requests opened %d new connections (first wave: %d)", concurrent, again, first)
	}
}
