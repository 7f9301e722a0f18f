package e2e

import (
	"bytes"
	"context"
	"errors"
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
	// startTimeout bounds how long a member may take to become ready.
	startTimeout = 60 * time.Second
	// stopTimeout bounds a graceful stop before the process is killed.
	stopTimeout = 20 * time.Second
	// requestTimeout bounds a single client request.
	requestTimeout = 30 * time.Second
)

// memberOpts configures startMember. Zero values give a default member.
type memberOpts struct {
	name    string   // member name; "m0" if empty
	dataDir string   // data dir; a fresh t.TempDir() if empty
	args    []string // extra flags appended after the generated ones
	env     []string // extra environment variables
	// cwd is the process's working directory (default: inherited).
	cwd string
	// omitName and omitDataDir leave out --name / --data-dir so that
	// defaults, environment variables or args decide them.
	omitName, omitDataDir bool
	// clusterName is the name used in --initial-cluster (default: name).
	clusterName string
	// bin is the executable (default: cairnBin), e.g. etcdBinary(t).
	bin string
}

// member is one cairn process (and its restarts on the same data dir).
type member struct {
	t         testing.TB
	name      string
	dataDir   string
	clientURL string
	peerURL   string
	args      []string
	env       []string
	logPath   string
	cwd       string
	// bin is the executable (default: cairnBin); cluster tests may run a
	// real etcd as one of the members.
	bin string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the current process has exited
	exitErr error         // valid once exited is closed
}

var (
	portsMu sync.Mutex
	ports   = map[int]bool{}
)

// freePort returns a loopback TCP port that is free right now and that this
// test binary has not handed out before.
func freePort(t testing.TB) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !ports[p] {
			ports[p] = true
			return p
		}
	}
	t.Fatal("no free port found")
	return 0
}

// startMember starts a single-member cluster and waits until it serves. It is
// stopped (SIGTERM, then SIGKILL) when the test ends, and its log is dumped
// if the test failed.
func startMember(t testing.TB, o memberOpts) *member {
	t.Helper()
	if o.name == "" {
		o.name = "m0"
	}
	if o.dataDir == "" {
		o.dataDir = filepath.Join(t.TempDir(), o.name+".etcd")
	}
	m := &member{
		t:         t,
		name:      o.name,
		dataDir:   o.dataDir,
		clientURL: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
		peerURL:   fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
		env:       o.env,
		logPath:   filepath.Join(t.TempDir(), o.name+".log"),
		bin:       o.bin,
	}
	if o.clusterName == "" {
		o.clusterName = o.name
	}
	m.cwd = o.cwd
	if !o.omitName {
		m.args = append(m.args, "--name", m.name)
	}
	if !o.omitDataDir {
		m.args = append(m.args, "--data-dir", m.dataDir)
	}
	m.args = append(append(m.args,
		"--listen-client-urls", m.clientURL,
		"--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", m.peerURL,
		"--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", o.clusterName+"="+m.peerURL,
		"--initial-cluster-token", "e2e-"+o.clusterName,
	), o.args...)
	t.Cleanup(func() {
		if m.running() {
			err := m.stop()
			if filepath.Base(m.bin) == "etcd" {
				// etcd ends its clean shutdown by re-raising SIGTERM;
				// cairn must exit 0.
				err = gracefulExit(err)
			}
			if err != nil {
				t.Errorf("stopping member %s: %v", m.name, err)
			}
		}
		if t.Failed() {
			m.dumpLog()
		}
	})
	m.start()
	return m
}

// start launches the process with the member's arguments and waits for the
// ready line.
func (m *member) start() {
	m.t.Helper()
	m.waitReady(m.launch())
}

// binary is the executable the member runs.
func (m *member) binary() string {
	if m.bin != "" {
		return m.bin
	}
	return cairnBin
}

// launch starts the process without waiting for it to be ready; the
// returned channel is closed once the ready line has been logged. Members
// of a multi-member cluster only become ready together, so they are
// launched first and waited for afterwards.
func (m *member) launch() <-chan struct{} {
	m.t.Helper()
	logFile, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		m.t.Fatalf("opening log file: %v", err)
	}
	fmt.Fprintf(logFile, "=== start %s %s\n", m.binary(), strings.Join(m.args, " "))
	lw := &lineWatcher{w: logFile, needle: []byte(readyLine), found: make(chan struct{})}
	cmd := exec.Command(m.binary(), m.args...)
	cmd.Env = append(os.Environ(), m.env...)
	cmd.Dir = m.cwd
	cmd.Stdout = lw
	cmd.Stderr = lw
	if err := cmd.Start(); err != nil {
		logFile.Close()
		m.t.Fatalf("starting %s: %v", m.binary(), err)
	}
	exited := make(chan struct{})
	m.mu.Lock()
	m.cmd, m.exited, m.exitErr = cmd, exited, nil
	m.mu.Unlock()
	go func() {
		err := cmd.Wait()
		logFile.Close()
		m.mu.Lock()
		m.exitErr = err
		m.mu.Unlock()
		close(exited)
	}()
	return lw.found
}

// waitReady waits for ready (from launch) to be closed, failing the test if
// the process exits first or takes longer than startTimeout.
func (m *member) waitReady(ready <-chan struct{}) {
	m.t.Helper()
	m.mu.Lock()
	exited := m.exited
	m.mu.Unlock()
	select {
	case <-ready:
	case <-exited:
		m.t.Fatalf("member %s exited before it was ready: %v", m.name, m.exitError())
	case <-time.After(startTimeout):
		m.t.Fatalf("member %s not ready after %v", m.name, startTimeout)
	}
}

func (m *member) running() bool {
	m.mu.Lock()
	exited := m.exited
	m.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

func (m *member) exitError() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.exitErr
}

// signal sends sig and waits for the process to exit, killing it after
// bound. It returns the process's exit error (nil for exit status 0).
func (m *member) signal(sig syscall.Signal, bound time.Duration) error {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	if cmd == nil {
		return errors.New("member never started")
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
		return m.exitError()
	case <-time.After(bound):
	}
	_ = cmd.Process.Kill()
	<-exited
	return fmt.Errorf("member %s did not exit within %v after %v; killed", m.name, bound, sig)
}

// stop stops the member gracefully (SIGTERM) and reports a non-zero exit.
func (m *member) stop() error { return m.signal(syscall.SIGTERM, stopTimeout) }

// kill kills the member at once (SIGKILL) and waits for it to be gone.
func (m *member) kill() {
	m.t.Helper()
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	_ = cmd.Process.Kill()
	<-exited
}

// restart starts the member again on the same data dir and ports.
func (m *member) restart() {
	m.t.Helper()
	if m.running() {
		m.t.Fatalf("restart of running member %s", m.name)
	}
	m.start()
}

func (m *member) dumpLog() {
	b, err := os.ReadFile(m.logPath)
	if err != nil {
		m.t.Logf("reading log of %s: %v", m.name, err)
		return
	}
	const max = 64 << 10
	if len(b) > max {
		b = append([]byte("...(truncated)...\n"), b[len(b)-max:]...)
	}
	m.t.Logf("log of member %s (%s):\n%s", m.name, m.logPath, b)
}

// client returns a client connected to the member, closed at test end.
func (m *member) client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{m.clientURL},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// ctx returns a context bounded by requestTimeout.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), requestTimeout)
	t.Cleanup(cancel)
	return c
}

// lineWatcher copies output to w and closes found once a line containing
// needle has been written.
type lineWatcher struct {
	mu     sync.Mutex
	w      *os.File
	needle []byte
	buf    []byte
	found  chan struct{}
	done   bool
}

func (l *lineWatcher) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.buf = append(l.buf, p...)
		if bytes.Contains(l.buf, l.needle) {
			l.done = true
			l.buf = nil
			close(l.found)
		} else if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
			l.buf = append(l.buf[:0], l.buf[i+1:]...)
		}
	}
	return l.w.Write(p)
}
