package main

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
	"syscall"
	"time"
)

// cluster is a fresh cluster of real server processes (cairn or etcd) on
// free loopback ports, each member with its own data directory and log.
type cluster struct {
	members []*memberProc
}

type memberProc struct {
	name      string
	clientURL string
	cmd       *exec.Cmd
	logPath   string
	exited    chan struct{}
}

// readyTimeout bounds how long a fresh cluster may take to elect a leader
// and answer /health.
const readyTimeout = 30 * time.Second

// startCluster starts n members of the server binary bin under dir, with
// etcd's flags (which cairn shares), and waits until every member reports
// itself healthy.
func startCluster(ctx context.Context, bin, dir string, n int) (*cluster, error) {
	clientURLs, peerURLs, err := freeURLs(n)
	if err != nil {
		return nil, err
	}
	initial := make([]string, n)
	for i := range n {
		initial[i] = fmt.Sprintf("m%d=%s", i, peerURLs[i])
	}
	c := &cluster{}
	for i := range n {
		m := &memberProc{name: fmt.Sprintf("m%d", i), clientURL: clientURLs[i], exited: make(chan struct{})}
		m.logPath = filepath.Join(dir, m.name+".log")
		err := m.start(bin, filepath.Join(dir, m.name+".data"), peerURLs[i], strings.Join(initial, ","))
		if err != nil {
			c.stop()
			return nil, err
		}
		c.members = append(c.members, m)
	}
	if err := c.awaitHealthy(ctx); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (m *memberProc) start(bin, dataDir, peerURL, initialCluster string) error {
	logFile, err := os.Create(m.logPath)
	if err != nil {
		return err
	}
	m.cmd = exec.Command(bin,
		"--name", m.name,
		"--data-dir", dataDir,
		"--listen-client-urls", m.clientURL,
		"--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", peerURL,
		"--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", initialCluster,
		"--initial-cluster-token", "bench",
		"--initial-cluster-state", "new",
	)
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	if err := m.cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		m.cmd.Wait()
		logFile.Close()
		close(m.exited)
	}()
	return nil
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

// awaitHealthy polls every member's /health until all answer 200.
func (c *cluster) awaitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for _, m := range c.members {
		for !m.healthy(ctx) {
			select {
			case <-m.exited:
				return fmt.Errorf("%s exited during startup; log %s:\n%s", m.name, m.logPath, tail(m.logPath))
			case <-ctx.Done():
				return fmt.Errorf("%s not healthy after %v; log %s:\n%s", m.name, readyTimeout, m.logPath, tail(m.logPath))
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func (m *memberProc) healthy(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.clientURL+"/health", nil)
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

func (c *cluster) endpoints() string {
	urls := make([]string, len(c.members))
	for i, m := range c.members {
		urls[i] = m.clientURL
	}
	return strings.Join(urls, ",")
}

func (c *cluster) pidList() []int {
	pids := make([]int, len(c.members))
	for i, m := range c.members {
		pids[i] = m.cmd.Process.Pid
	}
	return pids
}

func (c *cluster) pids() string {
	pids := make([]string, len(c.members))
	for i, m := range c.members {
		pids[i] = fmt.Sprint(m.cmd.Process.Pid)
	}
	return strings.Join(pids, ",")
}

// alive returns an error naming any member that has exited: a crash under
// load must fail the suite, not produce a report of errors.
func (c *cluster) alive() error {
	var errs []error
	for _, m := range c.members {
		select {
		case <-m.exited:
			errs = append(errs, fmt.Errorf("%s exited; log %s:\n%s", m.name, m.logPath, tail(m.logPath)))
		default:
		}
	}
	return errors.Join(errs...)
}

// stop sends SIGTERM to every member and waits, killing any member that
// has not exited after stopTimeout.
func (c *cluster) stop() {
	const stopTimeout = 10 * time.Second
	for _, m := range c.members {
		m.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, m := range c.members {
		select {
		case <-m.exited:
		case <-time.After(stopTimeout):
			m.cmd.Process.Kill()
			<-m.exited
		}
	}
}

// tail returns the last lines of a log for error messages.
func tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-15, 0):], "\n")
}
