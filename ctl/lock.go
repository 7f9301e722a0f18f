package ctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/cairnkv/cairn/client/concurrency"
)

func init() {
	register(&command{path: "lock", usage: "Acquires a named lock", flags: func(fs *flag.FlagSet, o *opts) {
		fs.IntVar(&o.ttl, "ttl", 10, "timeout for session")
	}, run: lockCmd})
}

// lockCmd takes the mutex named by the first argument and either holds it
// until SIGINT or SIGTERM, printing its key, or runs the rest of the
// arguments as a command while holding it.
func lockCmd(c *cmdCtx) error {
	if len(c.args) == 0 {
		return fail(exitBadArgs, "lock takes a lock name argument and an optional command to execute")
	}
	cl, err := c.newClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	s, err := concurrency.NewSession(cl, concurrency.WithTTL(c.o.ttl))
	if err != nil {
		return fail(exitError, "%v", err)
	}
	// etcdctl never revokes the session's lease: it expires after the TTL.
	defer s.Orphan()
	// Signals are caught only from here on, as etcdctl registers them
	// after its session exists.
	sigCtx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	m := concurrency.NewMutex(s, c.args[0])
	if err := m.Lock(sigCtx); err != nil {
		return fail(exitError, "%v", err)
	}
	if len(c.args) > 1 {
		return c.runLocked(m, c.args[1:])
	}
	return c.holdLock(sigCtx, s, m)
}

// holdLock prints the lock's key and keeps the lock until a signal (then
// releases it) or until the session ends.
func (c *cmdCtx) holdLock(sigCtx context.Context, s *concurrency.Session, m *concurrency.Mutex) error {
	resp, err := s.Client().Get(sigCtx, m.Key())
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if len(resp.Kvs) == 0 {
		return fail(exitError, "lock lost on init")
	}
	if err := c.p.get(resp); err != nil {
		return err
	}
	select {
	case <-sigCtx.Done():
		if err := m.Unlock(context.Background()); err != nil {
			return fail(exitError, "%v", err)
		}
		return nil
	case <-s.Done():
		return fail(exitError, "session expired")
	}
}

// runLocked runs args with the lock's key and revision in its environment,
// then releases the lock. cairnctl exits with the command's status.
func (c *cmdCtx) runLocked(m *concurrency.Mutex, args []string) error {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append([]string{
		"ETCD_LOCK_KEY=" + m.Key(),
		fmt.Sprintf("ETCD_LOCK_REV=%d", m.Header().GetRevision()),
	}, os.Environ()...)
	cmd.Stdout, cmd.Stderr = c.stdout, c.stderr
	runErr := cmd.Run()
	unlockErr := m.Unlock(context.Background())
	var ee *exec.ExitError
	switch {
	case errors.As(runErr, &ee):
		// ExitCode is -1 for a command killed by a signal; etcdctl then
		// exits with -1 as well, which the system reports as 255.
		return &exitErr{code: ee.ExitCode(), err: runErr}
	case runErr != nil:
		return fail(exitError, "%v", runErr)
	case unlockErr != nil:
		return fail(exitError, "%v", unlockErr)
	}
	return nil
}
