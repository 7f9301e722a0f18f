package peer

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestClientReachesUnixSocketPeers: the peer clients speak HTTP to
// unix://host:port URLs over the socket file named host:port (relative to
// the working directory, as in etcd), and plain http URLs over TCP.
func TestClientReachesUnixSocketPeers(t *testing.T) {
	t.Chdir(t.TempDir())
	sock := "127.0.0.1:12380"
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve := func(l net.Listener, answer string) *http.Server {
		hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, answer+" "+r.URL.Path)
		})}
		go hs.Serve(l)
		return hs
	}
	us, ts := serve(ul, "unix"), serve(tl, "tcp")
	defer us.Close()
	defer ts.Close()

	cl := newClient(dialSettings{timeout: time.Second}, 5*time.Second, 5*time.Second)
	defer cl.CloseIdleConnections()
	for _, tt := range []struct{ url, want string }{
		{"unix://" + sock + "/raft/probing", "unix /raft/probing"},
		{"http://" + tl.Addr().String() + "/members", "tcp /members"},
	} {
		resp, err := cl.Get(tt.url)
		if err != nil {
			t.Fatalf("GET %s: %v", tt.url, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != tt.want {
			t.Errorf("GET %s = %q, want %q", tt.url, body, tt.want)
		}
	}
}
