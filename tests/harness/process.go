package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ReadyLine is what etcd and cairn log once they serve clients.
const ReadyLine = "ready to serve client requests"

// Give-up bounds, not expectations.
const (
	// StartTimeout bounds how long a process may take to log ReadyLine.
	StartTimeout = 60 * time.Second
	// StopTimeout bounds a graceful stop before the process is killed.
	StopTimeout = 20 * time.Second
)

// ErrNotStopped is wrapped by Terminate's error when the process outlived
// its bound and was killed.
var ErrNotStopped = errors.New("did not exit in time; killed")

// startMarker begins the log of every start of a process, so that LogSince
// can find the latest.
const startMarker = "=== start "

// Process is one server process and its restarts. The exported fields
// configure the next start; change them only while it is not running.
type Process struct {
	Name string   // for messages
	Bin  string   // the executable
	Args []string // its arguments
	// Env is added to the environment, which is this test binary's, or,
	// with CleanEnv, this test binary's without ETCD*_ variables.
	Env      []string
	CleanEnv bool
	Dir      string // working directory (default: inherited)
	// LogPath receives the output of every start, appended.
	LogPath string
	// ReadyTimeout bounds the wait for ReadyLine (default StartTimeout).
	ReadyTimeout time.Duration

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the current process has exited
	exitErr error         // valid once exited is closed
}

// Launch starts the process without waiting for it; the channel is closed
// once it has logged ReadyLine. Members of a multi-member cluster become
// ready only together, so they are all launched before any is waited for.
func (p *Process) Launch() (<-chan struct{}, error) {
	if p.Running() {
		return nil, fmt.Errorf("%s is already running", p.Name)
	}
	logFile, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log of %s: %w", p.Name, err)
	}
	fmt.Fprintf(logFile, "%s%s %s %s\n", startMarker, time.Now().Format(time.RFC3339Nano), p.Bin, strings.Join(p.Args, " "))
	w := newLineWatcher(logFile, ReadyLine)
	cmd := exec.Command(p.Bin, p.Args...)
	cmd.Env = append(environ(p.CleanEnv), p.Env...)
	cmd.Dir = p.Dir
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", p.Name, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited, p.exitErr = cmd, exited, nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logFile, "=== exited: %v\n", err)
		logFile.Close()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(exited)
	}()
	return w.found, nil
}

// WaitReady waits for ready (from Launch), failing if the process exits
// first or is not ready within ReadyTimeout.
func (p *Process) WaitReady(ready <-chan struct{}) error {
	bound := p.ReadyTimeout
	if bound == 0 {
		bound = StartTimeout
	}
	select {
	case <-ready:
		return nil
	case <-p.Exited():
		return fmt.Errorf("%s exited before it was ready: %v (log %s)", p.Name, p.ExitError(), p.LogPath)
	case <-time.After(bound):
		return fmt.Errorf("%s not ready after %v (log %s)", p.Name, bound, p.LogPath)
	}
}

// Start launches the process and waits until it is ready.
func (p *Process) Start() error {
	ready, err := p.Launch()
	if err != nil {
		return err
	}
	return p.WaitReady(ready)
}

// Exited is closed once the current process has exited; nil before the
// first start.
func (p *Process) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// Running reports whether the process has been started and not exited.
func (p *Process) Running() bool {
	exited := p.Exited()
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

// ExitError is how the last process exited (nil for status 0); valid once
// Exited is closed.
func (p *Process) ExitError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Signal sends sig to the running process without waiting.
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("%s never started", p.Name)
	}
	return cmd.Process.Signal(sig)
}

// Terminate sends sig and waits for the process to exit, killing it after
// bound. It returns the process's exit error (nil for exit status 0).
func (p *Process) Terminate(sig syscall.Signal, bound time.Duration) error {
	if err := p.Signal(sig); err != nil && p.Exited() == nil {
		return err
	}
	select {
	case <-p.Exited():
		return p.ExitError()
	case <-time.After(bound):
	}
	p.Kill()
	return fmt.Errorf("%s after %v for %v: %w", p.Name, sig, bound, ErrNotStopped)
}

// Stop is a graceful stop: SIGTERM, SIGKILL after StopTimeout.
func (p *Process) Stop() error { return p.Terminate(syscall.SIGTERM, StopTimeout) }

// Kill kills the process at once (SIGKILL) and waits until it is gone.
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Log returns everything the process has logged over all its starts.
func (p *Process) Log() (string, error) {
	b, err := os.ReadFile(p.LogPath)
	return string(b), err
}

// LogSince returns what the process logged since its latest start.
func (p *Process) LogSince() (string, error) {
	s, err := p.Log()
	return sinceLastStart(s), err
}

func sinceLastStart(log string) string {
	if i := strings.LastIndex(log, startMarker); i >= 0 {
		return log[i:]
	}
	return log
}

// LogTail returns the last n lines the process logged since its latest
// start, for failure messages.
func (p *Process) LogTail(n int) string {
	s, err := p.LogSince()
	if err != nil {
		return fmt.Sprintf("(log of %s: %v)", p.Name, err)
	}
	return lastLines(s, n)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitLog waits until the process has logged a line containing needle
// since its latest start, failing after bound or once it has exited
// without it.
func (p *Process) WaitLog(needle string, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		log, err := p.LogSince()
		if err == nil && strings.Contains(log, needle) {
			return nil
		}
		if !p.Running() {
			return fmt.Errorf("%s exited without logging %q (log %s)", p.Name, needle, p.LogPath)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not log %q within %v (log %s)", p.Name, needle, bound, p.LogPath)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// maxDump bounds how much of a log DumpLog shows: the end matters most.
const maxDump = 64 << 10

// DumpLog writes the end of the process's log to t.Log.
func (p *Process) DumpLog(t testing.TB) {
	t.Helper()
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Logf("reading log of %s: %v", p.Name, err)
		return
	}
	if len(b) > maxDump {
		b = append([]byte("...(truncated)...\n"), b[len(b)-maxDump:]...)
	}
	t.Logf("log of %s (%s):\n%s", p.Name, p.LogPath, b)
}

// StopAtCleanup stops the process when t ends, reporting an unclean exit
// (see CleanExit), and dumps its log if t failed.
func (p *Process) StopAtCleanup(t testing.TB) {
	t.Cleanup(func() {
		if p.Running() {
			if err := CleanExit(p.Bin, p.Stop()); err != nil {
				t.Errorf("stopping %s: %v", p.Name, err)
			}
		}
		if t.Failed() {
			p.DumpLog(t)
		}
	})
}

// CleanExit maps the exit of bin stopped by SIGTERM to nil when it was
// clean: exit status 0 or, for etcd, death by the SIGTERM itself (etcd
// ends its shutdown by re-raising the signal). cairn must exit 0.
func CleanExit(bin string, err error) error {
	if filepath.Base(bin) == "etcd" {
		return GracefulExit(err)
	}
	return err
}

// GracefulExit maps death by SIGTERM to nil and passes any other exit
// error through.
func GracefulExit(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return nil
		}
	}
	return err
}

// CleanEnv is this test binary's environment without the ETCD_, ETCDCTL_
// and ETCDUTL_ variables, so that neither the servers nor the tools pick up
// settings from whoever runs the tests.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") && !strings.HasPrefix(kv, "ETCDCTL_") && !strings.HasPrefix(kv, "ETCDUTL_") {
			env = append(env, kv)
		}
	}
	return env
}

func environ(clean bool) []string {
	if clean {
		return CleanEnv()
	}
	return os.Environ()
}

// StartAll launches every process, then waits until each is ready. It
// fails as soon as one fails (members of a cluster wait for each other, so
// the others would only wait out their timeout).
func StartAll(ps ...*Process) error {
	ready := make([]<-chan struct{}, len(ps))
	for i, p := range ps {
		r, err := p.Launch()
		if err != nil {
			return err
		}
		ready[i] = r
	}
	errs := make(chan error, len(ps))
	for i, p := range ps {
		go func() { errs <- p.WaitReady(ready[i]) }()
	}
	for range ps {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

// LostPortRace reports whether the process's latest start ended because an
// address it was to listen on was taken. A free port is only free until
// some process binds it, and tests of other packages run at the same
// time, so such a start may be retried on fresh ports.
func (p *Process) LostPortRace() bool {
	log, err := p.LogSince()
	return err == nil && !p.Running() && strings.Contains(log, "address already in use")
}
