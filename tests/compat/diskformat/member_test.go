package diskformat

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
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

// Give-up bounds; nothing waits for them on the happy path.
const (
	startTimeout = 30 * time.Second
	stopTimeout  = 30 * time.Second
	rpcTimeout   = 20 * time.Second
)

// Every member in this package advertises the same peer URL (a TEST-NET
// address nobody dials in a single-member cluster) under the same name and
// cluster token, so member and cluster IDs are the same whichever server
// bootstraps the data dir. Each process listens for peers on its own port.
const (
	memberName = "m0"
	advPeerURL = "http://192.0.2.1:2380"
	clusterTok = "cairn-diskformat"
)

// kind names the server implementation running on a data dir.
type kind string

const (
	cairn kind = "cairn"
	etcd  kind = "etcd"
)

func (k kind) bin() string {
	if k == etcd {
		return etcdBin
	}
	return cairnBin
}

// member is one data dir on which cairn and etcd take turns. The client and
// peer listen ports stay fixed for the member's life.
type member struct {
	t         *testing.T
	dataDir   string
	clientURL string
	peerURL   string
	extra     []string

	mu   sync.Mutex
	kind kind
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

// newMember prepares a member on a fresh data dir; extra are more flags
// (e.g. --snapshot-count) passed to every process started on it.
func newMember(t *testing.T, extra ...string) *member {
	t.Helper()
	m := &member{
		t:         t,
		dataDir:   filepath.Join(t.TempDir(), "data"),
		clientURL: "http://" + freeAddr(t),
		peerURL:   "http://" + freeAddr(t),
		extra:     extra,
	}
	t.Cleanup(func() {
		m.mu.Lock()
		cmd, done := m.cmd, m.done
		m.mu.Unlock()
		if cmd != nil {
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return m
}

// workloadFlags are the flags every workload runs with: frequent snapshots,
// and few files kept so that snap and WAL purges happen.
var workloadFlags = []string{"--snapshot-count", "50", "--max-snapshots", "2", "--max-wals", "1"}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (m *member) args() []string {
	return append([]string{
		"--name", memberName,
		"--data-dir", m.dataDir,
		"--listen-client-urls", m.clientURL,
		"--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", m.peerURL,
		"--initial-advertise-peer-urls", advPeerURL,
		"--initial-cluster", memberName + "=" + advPeerURL,
		"--initial-cluster-token", clusterTok,
	}, m.extra...)
}

// start runs k on the member's data dir and waits until it serves clients.
func (m *member) start(k kind) {
	m.t.Helper()
	m.mu.Lock()
	if m.cmd != nil {
		m.mu.Unlock()
		m.t.Fatalf("start %s: %s is still running", k, m.kind)
	}
	cmd := exec.Command(k.bin(), m.args()...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	log := &syncBuffer{}
	ready := make(chan struct{})
	done := make(chan struct{})
	if err := cmd.Start(); err != nil {
		m.mu.Unlock()
		m.t.Fatalf("start %s: %v", k, err)
	}
	m.kind, m.cmd, m.log, m.done = k, cmd, log, done
	m.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			log.writeLine(line)
			if strings.Contains(line, "ready to serve client requests") {
				once.Do(func() { close(ready) })
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		err := cmd.Wait()
		log.writeLine(fmt.Sprintf("--- process exited: %v", err))
		pw.Close()
		close(done)
	}()
	select {
	case <-ready:
	case <-done:
		m.mu.Lock()
		m.cmd = nil
		m.mu.Unlock()
		m.t.Fatalf("%s exited before it was ready on %s; log:\n%s", k, m.dataDir, log.tail(60))
	case <-time.After(startTimeout):
		m.t.Fatalf("%s not ready after %v; log:\n%s", k, startTimeout, log.tail(60))
	}
}

// stop sends sig (SIGTERM or SIGKILL) and waits for the process to exit.
func (m *member) stop(sig syscall.Signal) {
	m.t.Helper()
	m.mu.Lock()
	cmd, done, k := m.cmd, m.done, m.kind
	m.mu.Unlock()
	if cmd == nil {
		m.t.Fatalf("stop: nothing running")
	}
	if err := cmd.Process.Signal(sig); err != nil {
		m.t.Fatalf("signal %v to %s: %v", sig, k, err)
	}
	select {
	case <-done:
	case <-time.After(stopTimeout):
		_ = cmd.Process.Kill()
		<-done
		m.t.Fatalf("%s did not exit within %v of %v; log:\n%s", k, stopTimeout, sig, m.log.tail(40))
	}
	m.mu.Lock()
	m.cmd = nil
	m.mu.Unlock()
}

// logTail is the end of the running (or last) process's output.
func (m *member) logTail() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.log == nil {
		return ""
	}
	return m.log.tail(40)
}

// client returns a client of the running process, closed at cleanup.
func (m *member) client() *clientv3.Client {
	m.t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:          []string{m.clientURL},
		DialTimeout:        5 * time.Second,
		Logger:             zap.NewNop(),
		MaxCallSendMsgSize: 4 << 20,
		MaxCallRecvMsgSize: 256 << 20,
	})
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { cli.Close() })
	return cli
}

func (m *member) snapDir() string { return filepath.Join(m.dataDir, "member", "snap") }
func (m *member) walDir() string  { return filepath.Join(m.dataDir, "member", "wal") }
func (m *member) dbPath() string  { return filepath.Join(m.snapDir(), "db") }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	t.Cleanup(cancel)
	return ctx
}

// syncBuffer collects a process's output for failure messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) writeLine(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
	b.buf.WriteByte('\n')
}

func (b *syncBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimRight(b.buf.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// listFiles returns the names in dir with the given suffix, sorted.
func listFiles(t *testing.T, dir, suffix string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			out = append(out, e.Name())
		}
	}
	return out
}
