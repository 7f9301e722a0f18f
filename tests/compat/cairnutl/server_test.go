package cairnutl

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

const (
	readyLine = "ready to serve client requests"
	// startBound and stopBound are give-up bounds, not expectations.
	startBound = 60 * time.Second
	stopBound  = 20 * time.Second
)

var (
	portMu    sync.Mutex
	usedPorts = map[int]bool{}
)

// freePort returns a loopback port that is free now and that this binary has
// not handed out before.
func freePort(t testing.TB) int {
	t.Helper()
	portMu.Lock()
	defer portMu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !usedPorts[p] {
			usedPorts[p] = true
			return p
		}
	}
	t.Fatal("no free port")
	return 0
}

func peerURL(t testing.TB) string { return fmt.Sprintf("http://127.0.0.1:%d", freePort(t)) }

// member is how one member of a cluster is configured.
type member struct {
	name    string
	peerURL string
	dataDir string
}

// initialCluster renders members as --initial-cluster.
func initialCluster(ms []member) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.name + "=" + m.peerURL
	}
	return strings.Join(parts, ",")
}

// server is one running etcd or cairn process.
type server struct {
	kind     string
	endpoint string // client host:port
	logPath  string
	cmd      *exec.Cmd
	exited   chan struct{}
	exitErr  error
}

// memberArgs are the flags that start m of cluster ms (state "new": a
// restored data dir ignores them apart from name and URLs).
func memberArgs(m member, ms []member, endpoint string) []string {
	return []string{
		"--name", m.name, "--data-dir", m.dataDir,
		"--listen-client-urls", "http://" + endpoint, "--advertise-client-urls", "http://" + endpoint,
		"--listen-peer-urls", m.peerURL, "--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", initialCluster(ms), "--initial-cluster-token", "cairnutl-compat",
	}
}

// startServer runs bin as member m of ms; it is stopped when t ends.
func startServer(t *testing.T, kind, bin string, m member, ms []member) *server {
	t.Helper()
	s := newServer(t, kind, m)
	if err := s.start(bin, memberArgs(m, ms, s.endpoint)); err != nil {
		t.Fatal(err)
	}
	return s
}

func newServer(t *testing.T, kind string, m member) *server {
	s := &server{kind: kind, endpoint: fmt.Sprintf("127.0.0.1:%d", freePort(t)), logPath: filepath.Join(t.TempDir(), kind+"-"+m.name+".log")}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("stopping %s: %v", s.kind, err)
		}
		if t.Failed() {
			s.dumpLog(t)
		}
	})
	return s
}

// startCluster starts one process per member concurrently (a member of a
// multi-member cluster is ready only once a quorum runs).
func startCluster(t *testing.T, kinds []string, ms []member) []*server {
	t.Helper()
	srvs := make([]*server, len(ms))
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		srvs[i] = newServer(t, kinds[i], m)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = srvs[i].start(binOf(kinds[i]), memberArgs(m, ms, srvs[i].endpoint))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return srvs
}

func binOf(kind string) string {
	if kind == "etcd" {
		return etcdBin
	}
	return cairnBin
}

func (s *server) start(bin string, args []string) error {
	logFile, err := os.Create(s.logPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(logFile, "=== %s %s\n", bin, strings.Join(args, " "))
	w := &readyWatcher{out: logFile, ready: make(chan struct{})}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.Env = cleanEnv()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", s.kind, err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() {
		s.exitErr = cmd.Wait()
		logFile.Close()
		close(s.exited)
	}()
	select {
	case <-w.ready:
		return nil
	case <-s.exited:
		return fmt.Errorf("%s exited before it was ready: %v (log %s)", s.kind, s.exitErr, s.logPath)
	case <-time.After(startBound):
		return fmt.Errorf("%s not ready after %v (log %s)", s.kind, startBound, s.logPath)
	}
}

// stop sends SIGTERM and kills after stopBound.
func (s *server) stop() error {
	if s.cmd == nil {
		return nil
	}
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(stopBound):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("%s did not stop within %v", s.kind, stopBound)
	}
}

func (s *server) dumpLog(t *testing.T) {
	b, _ := os.ReadFile(s.logPath)
	t.Logf("--- %s log (%s) ---\n%s", s.kind, s.logPath, b)
}

// client connects to s; it is closed when t ends.
func (s *server) client(t *testing.T) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") && !strings.HasPrefix(kv, "ETCDCTL_") && !strings.HasPrefix(kv, "ETCDUTL_") {
			env = append(env, kv)
		}
	}
	return env
}

// readyWatcher copies a process's output to out and closes ready once the
// ready line has been seen.
type readyWatcher struct {
	mu    sync.Mutex
	out   *os.File
	tail  []byte
	seen  bool
	ready chan struct{}
}

func (w *readyWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seen {
		w.tail = append(w.tail, p...)
		if bytes.Contains(w.tail, []byte(readyLine)) {
			w.seen = true
			w.tail = nil
			close(w.ready)
		} else if i := bytes.LastIndexByte(w.tail, '\n'); i >= 0 {
			w.tail = append(w.tail[:0], w.tail[i+1:]...)
		}
	}
	return w.out.Write(p)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
