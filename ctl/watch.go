package ctl

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"

	"github.com/cairnkv/cairn/client"
)

func init() {
	register(&command{path: "watch", usage: "Watches events stream on keys or prefixes", flags: func(fs *flag.FlagSet, o *opts) {
		fs.BoolVar(&o.interactive, "interactive", false, "Interactive mode")
		fs.BoolVar(&o.interactive, "i", false, "shorthand for --interactive")
		fs.BoolVar(&o.prefix, "prefix", false, "Watch on a prefix if prefix is set")
		fs.Int64Var(&o.rev, "rev", 0, "Revision to start watching")
		fs.BoolVar(&o.prevKV, "prev-kv", false, "get the previous key-value pair before the event happens")
		fs.BoolVar(&o.progressNotify, "progress-notify", false, "get periodic watch progress notification from server")
	}, run: watchCmd})
}

func watchCmd(c *cmdCtx) error {
	if c.o.interactive {
		return fail(exitBadFeature, "interactive watch is not supported by cairnctl yet")
	}
	if len(c.args) < 1 {
		return fail(exitBadArgs, "bad or missing key arguments")
	}
	// key [range_end] [exec-command ...]; with --prefix no range_end.
	key, rest := c.args[0], c.args[1:]
	var ops []client.OpOption
	if c.o.prefix {
		ops = append(ops, client.WithPrefix())
	} else if len(rest) > 0 {
		ops = append(ops, client.WithRange(rest[0]))
		rest = rest[1:]
	}
	if c.o.rev != 0 {
		ops = append(ops, client.WithRev(c.o.rev))
	}
	if c.o.prevKV {
		ops = append(ops, client.WithPrevKV())
	}
	if c.o.progressNotify {
		ops = append(ops, client.WithProgressNotify())
	}
	cl, err := c.newClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	for resp := range cl.Watch(ctx, key, ops...) {
		if resp.Canceled {
			fmt.Fprintf(c.stderr, "watch was canceled (%v)\n", resp.Err())
		}
		if resp.IsProgressNotify() {
			fmt.Fprintf(c.stdout, "progress notify: %d\n", resp.Header.GetRevision())
		}
		if err := c.p.watch(&resp); err != nil {
			return err
		}
		if len(rest) > 0 && len(resp.Events) > 0 {
			cmd := exec.Command(rest[0], rest[1:]...)
			cmd.Stdout, cmd.Stderr = c.stdout, c.stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(c.stderr, "command %q error (%v)\n", rest, err)
			}
		}
	}
	if ctx.Err() == nil {
		return fail(exitInterrupted, "watch is canceled by the server")
	}
	return nil
}
