package e2e

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/tests/harness"
)

const (
	readyLine = harness.ReadyLine
	// startTimeout bounds how long a member may take to become ready.
	startTimeout = harness.StartTimeout
	// stopTimeout bounds a graceful stop before the process is killed.
	stopTimeout = harness.StopTimeout
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

	// proc runs the process; it is configured from the fields above at
	// every launch, so tests may change them while the member is down.
	proc harness.Process
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
		clientURL: harness.FreeURL(t),
		peerURL:   harness.FreeURL(t),
		env:       o.env,
		logPath:   filepath.Join(t.TempDir(), o.name+".log"),
		bin:       o.bin,
	}
	if o.clusterName == "" {
		o.clusterName = o.name
	}
	m.cwd = o.cwd
	f := harness.Flags{
		Name:           o.name,
		DataDir:        m.dataDir,
		ClientURL:      m.clientURL,
		PeerURL:        m.peerURL,
		InitialCluster: o.clusterName + "=" + m.peerURL,
		Token:          "e2e-" + o.clusterName,
		Extra:          o.args,
	}
	if o.omitName {
		f.Name = ""
	}
	if o.omitDataDir {
		f.DataDir = ""
	}
	m.args = f.Args()
	t.Cleanup(func() {
		// etcd ends its clean shutdown by re-raising SIGTERM; cairn must
		// exit 0.
		if m.running() {
			if err := harness.CleanExit(m.binary(), m.stop()); err != nil {
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
	m.proc.Name, m.proc.Bin, m.proc.Args = "member "+m.name, m.binary(), m.args
	m.proc.Env, m.proc.Dir, m.proc.LogPath = m.env, m.cwd, m.logPath
	ready, err := m.proc.Launch()
	if err != nil {
		m.t.Fatal(err)
	}
	return ready
}

// waitReady waits for ready (from launch), failing the test if the process
// exits first or takes longer than startTimeout.
func (m *member) waitReady(ready <-chan struct{}) {
	m.t.Helper()
	if err := m.proc.WaitReady(ready); err != nil {
		m.t.Fatal(err)
	}
}

func (m *member) running() bool { return m.proc.Running() }

// exited is closed once the current process has exited.
func (m *member) exited() <-chan struct{} { return m.proc.Exited() }

func (m *member) exitError() error { return m.proc.ExitError() }

// waitExit waits up to bound for the process to exit by itself and returns
// its exit error. A process still running then is killed and fails the
// test; what is what it should have done, for the message.
func (m *member) waitExit(t *testing.T, bound time.Duration, what string) error {
	t.Helper()
	select {
	case <-m.exited():
	case <-time.After(bound):
		m.kill()
		t.Fatalf("member %s still running after %v: want it to %s", m.name, bound, what)
	}
	return m.exitError()
}

// signal sends sig and waits for the process to exit, killing it after
// bound. It returns the process's exit error (nil for exit status 0).
func (m *member) signal(sig syscall.Signal, bound time.Duration) error {
	return m.proc.Terminate(sig, bound)
}

// stop stops the member gracefully (SIGTERM) and reports a non-zero exit.
func (m *member) stop() error { return m.proc.Stop() }

// kill kills the member at once (SIGKILL) and waits for it to be gone.
func (m *member) kill() { m.proc.Kill() }

// restart starts the member again on the same data dir and ports.
func (m *member) restart() {
	m.t.Helper()
	if m.running() {
		m.t.Fatalf("restart of running member %s", m.name)
	}
	m.start()
}

func (m *member) dumpLog() { m.proc.DumpLog(m.t) }

// client returns a client connected to the member, closed at test end.
func (m *member) client(t testing.TB) *clientv3.Client {
	t.Helper()
	return harness.Client(t, m.clientURL)
}

// ctx returns a context bounded by requestTimeout.
func ctx(t testing.TB) context.Context { return harness.Ctx(t, requestTimeout) }
