package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Member is one server process, which can be stopped and started again
// on the same data directory and ports.
type Member struct {
	Name      string
	ClientURL string
	DataDir   string
	LogPath   string

	bin  string
	args []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	started time.Time
	lines   *lineClock
}

func newMember(opts Options, name, clientURL, peerURL, initialCluster string) *Member {
	m := &Member{
		Name:      name,
		ClientURL: clientURL,
		DataDir:   dataDir(opts.Dir, name),
		LogPath:   logPath(opts.Dir, name),
		bin:       opts.Bin,
		lines:     newLineClock(opts.WatchLines, time.Now),
	}
	m.args = append([]string{
		"--name", name,
		"--data-dir", m.DataDir,
		"--listen-client-urls", clientURL,
		"--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL,
		"--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", initialCluster,
		"--initial-cluster-token", "bench",
		// Ignored once the data directory exists, so a restart reuses it.
		"--initial-cluster-state", "new",
	}, opts.ExtraArgs...)
	closed := make(chan struct{})
	close(closed)
	m.exited = closed
	return m
}

// Start executes the server. The member must not be running. Its log
// is appended to LogPath across restarts, and the watched lines are
// timed afresh from this start.
func (m *Member) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.exited:
	default:
		return fmt.Errorf("%s is already running", m.Name)
	}
	logFile, err := os.OpenFile(m.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(m.bin, m.args...)
	m.lines.reset(logFile)
	cmd.Stdout, cmd.Stderr = m.lines, m.lines
	m.started = time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", m.bin, err)
	}
	exited := make(chan struct{})
	m.cmd, m.exited = cmd, exited
	go func() {
		cmd.Wait()
		logFile.Close()
		close(exited)
	}()
	return nil
}

// StartedAt is when the latest Start executed the binary.
func (m *Member) StartedAt() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.started
}

// LineSeen reports when a log line containing one of Options.WatchLines
// first arrived after the latest start.
func (m *Member) LineSeen(substr string) (time.Time, bool) { return m.lines.seen(substr) }

// PID is the process ID of the latest start (0 if never started).
func (m *Member) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Exited is closed when the latest process has exited and been waited
// for (at once for a member that never started).
func (m *Member) Exited() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.exited
}

// Running reports whether the latest process is still running.
func (m *Member) Running() bool {
	select {
	case <-m.Exited():
		return false
	default:
		return true
	}
}

// Alive returns an error with the log's tail if the process has exited.
func (m *Member) Alive() error {
	if m.Running() {
		return nil
	}
	return fmt.Errorf("%s exited; log %s:\n%s", m.Name, m.LogPath, Tail(m.LogPath))
}

// AwaitHealthy polls /health until it answers 200, the process exits or
// ctx ends.
func (m *Member) AwaitHealthy(ctx context.Context) error {
	for !healthy(ctx, m.ClientURL) {
		select {
		case <-m.Exited():
			return fmt.Errorf("%s exited during startup; log %s:\n%s", m.Name, m.LogPath, Tail(m.LogPath))
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy: %w; log %s:\n%s", m.Name, ctx.Err(), m.LogPath, Tail(m.LogPath))
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

func (m *Member) signalStop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		m.cmd.Process.Signal(syscall.SIGTERM)
	}
}

// Stop sends SIGTERM and waits until the process has exited, killing it
// after timeout. It returns the time from the signal to the exit; a
// member that had to be killed is an error. Stopping a member that is
// not running does nothing.
func (m *Member) Stop(timeout time.Duration) (time.Duration, error) {
	exited := m.Exited()
	select {
	case <-exited:
		return 0, nil
	default:
	}
	start := time.Now()
	m.signalStop()
	select {
	case <-exited:
		return time.Since(start), nil
	case <-time.After(timeout):
		m.mu.Lock()
		m.cmd.Process.Kill()
		m.mu.Unlock()
		<-exited
		return time.Since(start), fmt.Errorf("%s did not exit within %v of SIGTERM; killed", m.Name, timeout)
	}
}
