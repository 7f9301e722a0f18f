package diskformat

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/tests/harness"
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

	kind kind // what runs, or ran last, on the data dir
	proc *harness.Process
}

// newMember prepares a member on a fresh data dir; extra are more flags
// (e.g. --snapshot-count) passed to every process started on it.
func newMember(t *testing.T, extra ...string) *member {
	t.Helper()
	m := &member{
		t:         t,
		dataDir:   filepath.Join(t.TempDir(), "data"),
		clientURL: harness.FreeURL(t),
		peerURL:   harness.FreeURL(t),
		extra:     extra,
	}
	m.proc = &harness.Process{
		Name:         "member on " + m.dataDir,
		LogPath:      filepath.Join(t.TempDir(), "member.log"),
		ReadyTimeout: startTimeout,
	}
	t.Cleanup(m.proc.Kill)
	return m
}

// workloadFlags are the flags every workload runs with: frequent snapshots,
// and few files kept so that snap and WAL purges happen.
var workloadFlags = []string{"--snapshot-count", "50", "--max-snapshots", "2", "--max-wals", "1"}

func (m *member) args() []string {
	return harness.Flags{
		Name: memberName, DataDir: m.dataDir, ClientURL: m.clientURL,
		PeerURL: m.peerURL, AdvertisePeerURL: advPeerURL, Token: clusterTok, Extra: m.extra,
	}.Args()
}

// start runs k on the member's data dir and waits until it serves clients.
func (m *member) start(k kind) {
	m.t.Helper()
	if m.proc.Running() {
		m.t.Fatalf("start %s: %s is still running", k, m.kind)
	}
	m.kind, m.proc.Bin, m.proc.Args = k, k.bin(), m.args()
	if err := m.proc.Start(); err != nil {
		m.t.Fatalf("start %s: %v; log:\n%s", k, err, m.proc.LogTail(60))
	}
}

// stop sends sig (SIGTERM or SIGKILL) and waits for the process to exit.
func (m *member) stop(sig syscall.Signal) {
	m.t.Helper()
	if !m.proc.Running() {
		m.t.Fatalf("stop: nothing running")
	}
	if err := m.proc.Terminate(sig, stopTimeout); errors.Is(err, harness.ErrNotStopped) {
		m.t.Fatalf("%s: %v; log:\n%s", m.kind, err, m.proc.LogTail(40))
	}
}

// logTail is the end of the running (or last) process's output.
func (m *member) logTail() string { return m.proc.LogTail(40) }

// client returns a client of the running process, closed at cleanup.
func (m *member) client() *clientv3.Client {
	m.t.Helper()
	return harness.ClientWith(m.t, clientv3.Config{
		Endpoints:          []string{m.clientURL},
		DialTimeout:        5 * time.Second,
		MaxCallSendMsgSize: 4 << 20,
		MaxCallRecvMsgSize: 256 << 20,
	})
}

func (m *member) snapDir() string { return filepath.Join(m.dataDir, "member", "snap") }
func (m *member) walDir() string  { return filepath.Join(m.dataDir, "member", "wal") }
func (m *member) dbPath() string  { return filepath.Join(m.snapDir(), "db") }

func ctxT(t *testing.T) context.Context { return harness.Ctx(t, rpcTimeout) }

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
