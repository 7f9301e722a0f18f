package etcdctl

import (
	"bytes"
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

// server is one running etcd or cairn process.
type server struct {
	kind     string // "etcd" or "cairn"
	bin      string
	hostPort string // client address, host:port
	dataDir  string
	scratch  string // a directory for files the test makes, such as snapshots
	logPath  string
	cmd      *exec.Cmd
	exited   chan struct{}
	exitErr  error // valid once exited is closed
}

// pair is a real etcd and a cairn configured identically.
type pair struct {
	etcd, cairn *server
}

func (p *pair) both() []*server { return []*server{p.etcd, p.cairn} }

// pairOpts configures startPairWith; zero values give startPair's defaults.
type pairOpts struct {
	bins     [2]string // binaries run as "etcd" and "cairn"
	dataDirs [2]string // existing data dirs; fresh ones if empty
	peerURL  string    // the advertised peer URL
	extra    []string  // flags for both
}

// startPair starts a fresh etcd and a fresh cairn. Both advertise the same
// peer URL (etcd's; cairn listens for peers elsewhere, which a single member
// never dials) with the same name and token, so their member and cluster IDs
// match. extra flags are given to both. They are stopped when t ends.
func startPair(t *testing.T, extra ...string) *pair {
	t.Helper()
	return startPairWith(t, pairOpts{extra: extra})
}

func startPairWith(t *testing.T, o pairOpts) *pair {
	t.Helper()
	advertisedPeer := o.peerURL
	if advertisedPeer == "" {
		advertisedPeer = fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	}
	if o.bins[0] == "" {
		o.bins = [2]string{etcdBin, cairnBin}
	}
	extra := o.extra
	common := []string{
		"--name", "m0",
		"--initial-advertise-peer-urls", advertisedPeer,
		"--initial-cluster", "m0=" + advertisedPeer,
		"--initial-cluster-token", "etcdctl-compat",
		"--initial-cluster-state", "new",
	}
	common = append(common, extra...)
	p := &pair{}
	var wg sync.WaitGroup
	var errs [2]error
	for i, kind := range []string{"etcd", "cairn"} {
		peer := advertisedPeer
		if kind == "cairn" {
			peer = fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		}
		s := &server{kind: kind, bin: o.bins[i], hostPort: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
		s.dataDir = o.dataDirs[i]
		if s.dataDir == "" {
			s.dataDir = filepath.Join(t.TempDir(), "data")
		}
		s.scratch = t.TempDir()
		s.logPath = filepath.Join(t.TempDir(), kind+".log")
		args := append([]string{
			"--data-dir", s.dataDir,
			"--listen-client-urls", "http://" + s.hostPort,
			"--advertise-client-urls", "http://" + s.hostPort,
			"--listen-peer-urls", peer,
		}, common...)
		if kind == "etcd" {
			p.etcd = s
		} else {
			p.cairn = s
		}
		t.Cleanup(func() {
			if err := s.stop(); err != nil {
				t.Errorf("stopping %s: %v", s.kind, err)
			}
			if t.Failed() {
				s.dumpLog(t)
			}
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.start(args)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (s *server) start(args []string) error {
	bin := s.bin
	logFile, err := os.Create(s.logPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(logFile, "=== %s %s\n", bin, strings.Join(args, " "))
	w := &readyWatcher{out: logFile, ready: make(chan struct{})}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = w
	cmd.Stderr = w
	cmd.Env = cleanEnv()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", s.kind, err)
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
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

// stop sends SIGTERM, kills after stopBound, and reports an unclean exit.
func (s *server) stop() error {
	if s.cmd == nil {
		return nil
	}
	select {
	case <-s.exited:
		return nil // already gone; start reported it
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		// etcd re-raises SIGTERM on itself once it has shut down.
		if s.bin == etcdBin && s.exitErr != nil && strings.Contains(s.exitErr.Error(), "signal: terminated") {
			return nil
		}
		return s.exitErr
	case <-time.After(stopBound):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("no exit within %v of SIGTERM; killed", stopBound)
	}
}

func (s *server) dumpLog(t *testing.T) {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		t.Logf("log of %s: %v", s.kind, err)
		return
	}
	const max = 8 << 10
	if len(b) > max {
		b = append([]byte("...(truncated)...\n"), b[len(b)-max:]...)
	}
	t.Logf("log of %s:\n%s", s.kind, b)
}

// cleanEnv is the environment without ETCD_* and ETCDCTL_* variables, so
// neither the servers nor etcdctl pick up settings from the caller.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "ETCD_") || strings.HasPrefix(kv, "ETCDCTL_") {
			continue
		}
		env = append(env, kv)
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
