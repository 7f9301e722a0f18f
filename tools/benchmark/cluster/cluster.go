// Package cluster starts clusters of real server processes for the
// benchmark commands: cairn or etcd (they share etcd's flags), on free
// loopback ports, each member with its own data directory and log file.
//
// It owns the processes' lives: start, wait until healthy, stop with
// SIGTERM (and the time that took), restart on the same data directory,
// and the moment given log lines appeared. It measures nothing else.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Options describe a cluster to start.
type Options struct {
	// Bin is the server binary.
	Bin string
	// Dir holds every member's data directory (<name>.data) and log
	// (<name>.log).
	Dir string
	// Members is the cluster size; 0 means 1.
	Members int
	// ExtraArgs are appended to every member's flags.
	ExtraArgs []string
	// WatchLines are log substrings whose first appearance after each
	// start is timed (see Member.LineSeen).
	WatchLines []string
}

// Cluster is a running (or stopped) set of members.
type Cluster struct {
	Members []*Member
}

// ReadyTimeout bounds how long a fresh cluster may take to elect a
// leader and answer /health.
const ReadyTimeout = 30 * time.Second

// Start starts the members of a new cluster and waits until every one
// reports itself healthy.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	n := max(opts.Members, 1)
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	clientURLs, peerURLs, err := freeURLs(n)
	if err != nil {
		return nil, err
	}
	initial := make([]string, n)
	for i := range n {
		initial[i] = fmt.Sprintf("m%d=%s", i, peerURLs[i])
	}
	c := &Cluster{}
	for i := range n {
		m := newMember(opts, fmt.Sprintf("m%d", i), clientURLs[i], peerURLs[i], strings.Join(initial, ","))
		if err := m.Start(); err != nil {
			c.Stop()
			return nil, err
		}
		c.Members = append(c.Members, m)
	}
	if err := c.AwaitHealthy(ctx, ReadyTimeout); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// freeURLs finds 2n free loopback ports. They are held open until all are
// found so that no two members get the same one.
func freeURLs(n int) (clients, peers []string, err error) {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range 2 * n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, err
		}
		listeners = append(listeners, l)
	}
	for i, l := range listeners {
		u := "http://" + l.Addr().String()
		if i < n {
			clients = append(clients, u)
		} else {
			peers = append(peers, u)
		}
	}
	return clients, peers, nil
}

// AwaitHealthy polls every member's /health until all answer 200.
func (c *Cluster) AwaitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, m := range c.Members {
		if err := m.AwaitHealthy(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Endpoints is the members' client URLs, comma-separated.
func (c *Cluster) Endpoints() string {
	urls := make([]string, len(c.Members))
	for i, m := range c.Members {
		urls[i] = m.ClientURL
	}
	return strings.Join(urls, ",")
}

// PIDList is the members' process IDs.
func (c *Cluster) PIDList() []int {
	pids := make([]int, len(c.Members))
	for i, m := range c.Members {
		pids[i] = m.PID()
	}
	return pids
}

// PIDs is the members' process IDs, comma-separated.
func (c *Cluster) PIDs() string {
	pids := make([]string, len(c.Members))
	for i, m := range c.Members {
		pids[i] = fmt.Sprint(m.PID())
	}
	return strings.Join(pids, ",")
}

// Alive returns an error naming any member that has exited: a crash under
// load must fail a benchmark, not produce a report of errors.
func (c *Cluster) Alive() error {
	var errs []error
	for _, m := range c.Members {
		if err := m.Alive(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// StopTimeout is how long Stop waits after SIGTERM before it kills.
const StopTimeout = 60 * time.Second

// Stop sends SIGTERM to every running member at once and waits for all.
func (c *Cluster) Stop() {
	for _, m := range c.Members {
		m.signalStop()
	}
	for _, m := range c.Members {
		m.Stop(StopTimeout)
	}
}

// healthy reports whether url's /health answers 200.
func healthy(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Tail returns the last lines of a log for error messages.
func Tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-15, 0):], "\n")
}

// logPath and dataDir name a member's files under dir.
func logPath(dir, name string) string { return filepath.Join(dir, name+".log") }
func dataDir(dir, name string) string { return filepath.Join(dir, name+".data") }

// Build compiles the main packages pkgs (import paths, or directories
// such as "./cmd/cairn" relative to the current one) into dir, each
// binary named after the last element of its path. One go build for all
// of them lets the go command compile and link them in parallel.
func Build(dir string, pkgs ...string) error {
	args := append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)
	if msg, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", strings.Join(pkgs, " "), err, msg)
	}
	return nil
}
