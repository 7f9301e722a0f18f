package ctl

import (
	"context"
	"flag"
	"os/signal"
	"syscall"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/client/concurrency"
)

func init() {
	register(&command{path: "elect", usage: "Observes and participates in leader election", flags: func(fs *flag.FlagSet, o *opts) {
		fs.BoolVar(&o.listen, "listen", false, "observation mode")
		fs.BoolVar(&o.listen, "l", false, "shorthand for --listen")
	}, run: electCmd})
}

// electCmd campaigns in the election named by the first argument with the
// proposal given as the second, or with --listen prints every leader.
func electCmd(c *cmdCtx) error {
	if n := len(c.args); n != 1 && n != 2 {
		return fail(exitBadArgs, "elect takes one election name argument and an optional proposal argument")
	}
	// etcdctl checks --listen only after making its client, but its client
	// connects lazily, so a usage error is reported even with no server.
	listen := len(c.args) == 1
	if listen && !c.o.listen {
		return fail(exitBadArgs, "no proposal argument but -l not set")
	}
	if !listen && c.o.listen {
		return fail(exitBadArgs, "proposal given but -l is set")
	}
	cl, err := c.newClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	if listen {
		return c.observe(cl, c.args[0])
	}
	return c.campaign(cl, c.args[0], c.args[1])
}

// electSession starts the session of an election as etcdctl does: with the
// default TTL, and left to expire rather than revoked when cairnctl ends.
// Signals are caught from then on.
func electSession(cl *client.Client) (*concurrency.Session, context.Context, func(), error) {
	s, err := concurrency.NewSession(cl)
	if err != nil {
		return nil, nil, nil, fail(exitError, "%v", err)
	}
	sigCtx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	return s, sigCtx, func() { stop(); s.Orphan() }, nil
}

// observe prints the leader and each change of it until a signal.
func (c *cmdCtx) observe(cl *client.Client, name string) error {
	s, sigCtx, done, err := electSession(cl)
	if err != nil {
		return err
	}
	defer done()
	e := concurrency.NewElection(s, name)
	for resp := range e.Observe(sigCtx) {
		if err := c.p.get(resp); err != nil {
			return err
		}
	}
	if sigCtx.Err() == nil {
		return fail(exitError, "elect: observer lost")
	}
	return nil
}

// campaign waits for the leadership, prints the leader key and value, and
// resigns on a signal.
func (c *cmdCtx) campaign(cl *client.Client, name, proposal string) error {
	s, sigCtx, done, err := electSession(cl)
	if err != nil {
		return err
	}
	defer done()
	e := concurrency.NewElection(s, name)
	if err := e.Campaign(sigCtx, proposal); err != nil {
		return fail(exitError, "%v", err)
	}
	resp, err := cl.Get(sigCtx, e.Key())
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if err := c.p.get(resp); err != nil {
		return err
	}
	select {
	case <-sigCtx.Done():
	case <-s.Done():
		return fail(exitError, "elect: session expired")
	}
	if err := e.Resign(context.Background()); err != nil {
		return fail(exitError, "%v", err)
	}
	return nil
}
