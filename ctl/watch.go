package ctl

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/cairnkv/cairn/client"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

func init() {
	register(&command{path: "watch", usage: "Watches events stream on keys or prefixes", flags: watchFlags, run: watchCmd})
}

func watchFlags(fs *flag.FlagSet, o *opts) {
	fs.BoolVar(&o.interactive, "interactive", false, "Interactive mode")
	fs.BoolVar(&o.interactive, "i", false, "shorthand for --interactive")
	fs.BoolVar(&o.prefix, "prefix", false, "Watch on a prefix if prefix is set")
	fs.Int64Var(&o.rev, "rev", 0, "Revision to start watching")
	fs.BoolVar(&o.prevKV, "prev-kv", false, "get the previous key-value pair before the event happens")
	fs.BoolVar(&o.progressNotify, "progress-notify", false, "get periodic watch progress notification from server")
}

var (
	errBadArgsNum            = errors.New("bad number of arguments")
	errBadArgsNumConflictEnv = errors.New("bad number of arguments (found conflicting environment key)")
	errBadArgsNumSeparator   = errors.New("bad number of arguments (found separator --, but no commands)")
)

// watchSpec is one watch to open: its key arguments (key, or key and
// range end), its options, and the command to run per event.
type watchSpec struct {
	args []string
	o    opts
	exec []string
}

// withEnvKey puts ETCDCTL_WATCH_KEY (and ETCDCTL_WATCH_RANGE_END) before
// the arguments, then drops the exec command, which etcdctl finds by the
// last argument equal to the command's name.
func withEnvKey(args, execArgs []string, envKey, envRange string) []string {
	if envKey != "" {
		ranges := []string{envKey}
		if envRange != "" {
			ranges = append(ranges, envRange)
		}
		args = append(ranges, args...)
	}
	if len(execArgs) == 0 {
		return args
	}
	end := len(args) - 1
	for ; end >= 0 && args[end] != execArgs[0]; end-- {
	}
	return args[:max(end, 0)]
}

// parseWatchCmdline reads `watch [key [range_end]] [-- cmd args...]` from
// the command line: args are the positional arguments, dashAt how many
// precede "--" (-1 without one).
func parseWatchCmdline(args []string, dashAt int, o opts, envKey, envRange string) (watchSpec, error) {
	hasExec := dashAt >= 0
	switch {
	case hasExec && dashAt == len(args):
		return watchSpec{}, errBadArgsNumSeparator
	case !hasExec && len(args) == 0 && envKey == "":
		return watchSpec{}, errBadArgsNum
	case envKey != "" && hasExec && dashAt > 0:
		return watchSpec{}, errBadArgsNumConflictEnv
	case envKey != "" && !hasExec && len(args) > 0:
		return watchSpec{}, errBadArgsNumConflictEnv
	}
	var execArgs []string
	if hasExec {
		execArgs = args[dashAt:]
	}
	return watchSpec{args: withEnvKey(args, execArgs, envKey, envRange), o: o, exec: execArgs}, nil
}

// parseWatchLine reads one interactive request, `watch [options] key
// [range_end] [-- cmd args...]`. Its options are the line's own: those of
// the command line do not apply, as in etcdctl.
func parseWatchLine(words []string, envKey, envRange string) (watchSpec, error) {
	words = words[1:] // "watch"
	if i := slices.Index(words, "--"); i >= 0 && i == len(words)-1 {
		return watchSpec{}, errBadArgsNumSeparator
	}
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	var o opts
	watchFlags(fs, &o)
	sc, err := scan(fs, words)
	if err == nil {
		err = setFlags(fs, sc.flags)
	}
	if err != nil {
		return watchSpec{}, err
	}
	hasExec := sc.dashAt >= 0
	switch {
	case !hasExec && envKey == "" && len(sc.pos) < 1:
		return watchSpec{}, errBadArgsNum
	case !hasExec && envKey != "" && len(sc.pos) > 0:
		return watchSpec{}, errBadArgsNumConflictEnv
	}
	var execArgs []string
	if hasExec {
		execArgs = sc.pos[sc.dashAt:]
	}
	return watchSpec{args: withEnvKey(sc.pos, execArgs, envKey, envRange), o: o, exec: execArgs}, nil
}

// watchOps turns a spec into the key and options of a watch.
func (s watchSpec) watchOps() (string, []client.OpOption, error) {
	if len(s.args) < 1 {
		return "", nil, errBadArgsNum
	}
	ops := []client.OpOption{client.WithRev(s.o.rev)}
	if len(s.args) == 2 {
		if s.o.prefix {
			return "", nil, errors.New("`range_end` and `--prefix` are mutually exclusive")
		}
		ops = append(ops, client.WithRange(s.args[1]))
	}
	if s.o.prefix {
		ops = append(ops, client.WithPrefix())
	}
	if s.o.prevKV {
		ops = append(ops, client.WithPrevKV())
	}
	if s.o.progressNotify {
		ops = append(ops, client.WithProgressNotify())
	}
	return s.args[0], ops, nil
}

func watchCmd(c *cmdCtx) error {
	envKey, envRange := c.getenv("ETCDCTL_WATCH_KEY"), c.getenv("ETCDCTL_WATCH_RANGE_END")
	if envKey == "" && envRange != "" {
		return fail(exitBadArgs, "ETCDCTL_WATCH_KEY is empty but got ETCDCTL_WATCH_RANGE_END=%q", envRange)
	}
	if c.o.interactive {
		return watchInteractive(c, envKey, envRange)
	}
	spec, err := parseWatchCmdline(c.args, c.dashAt, *c.o, envKey, envRange)
	if err != nil {
		return fail(exitBadArgs, "%v", err)
	}
	key, ops, err := spec.watchOps()
	if err != nil {
		return fail(exitBadArgs, "%v", err)
	}
	cl, err := c.newClient()
	if err != nil {
		return err
	}
	w := &watchPrinter{c: c}
	err = w.print(cl.Watch(client.WithRequireLeader(context.Background()), key, ops...), spec.exec)
	if cerr := cl.Close(); err == nil && cerr != nil {
		return fail(exitBadConn, "%v", cerr)
	}
	if err != nil {
		return err
	}
	return fail(exitInterrupted, "watch is canceled by the server")
}

// watchInteractive serves watch and progress requests read from stdin
// until it ends, which etcdctl treats as an error.
func watchInteractive(c *cmdCtx, envKey, envRange string) error {
	cl, err := c.newClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(client.WithRequireLeader(context.Background()))
	w := &watchPrinter{c: c, failed: make(chan error, 1)}
	var wg sync.WaitGroup
	defer func() {
		cancel()
		_ = cl.Close()
		wg.Wait()
	}()
	lines := make(chan string)
	readErr := make(chan error, 1)
	go watchLines(bufio.NewReader(c.stdin), lines, readErr, ctx.Done())
	for {
		var l string
		select {
		case err := <-w.failed:
			return err
		case err := <-readErr:
			return fail(exitInvalidInput, "error reading watch request line: %w", err)
		case l = <-lines:
		}
		if err := w.request(ctx, cl, &wg, l, envKey, envRange); err != nil {
			return err
		}
	}
}

// watchLines sends each line of r, without its newline, until r fails or
// done closes.
func watchLines(r *bufio.Reader, lines chan<- string, errc chan<- error, done <-chan struct{}) {
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			errc <- err
			return
		}
		select {
		case lines <- strings.TrimSuffix(l, "\n"):
		case <-done:
			return
		}
	}
}

// request serves one interactive line.
func (w *watchPrinter) request(ctx context.Context, cl *client.Client, wg *sync.WaitGroup, l, envKey, envRange string) error {
	words := argify(l)
	if len(words) < 1 {
		fmt.Fprintf(w.c.stderr, "Invalid command: %s (watch and progress supported)\n", l)
		return nil
	}
	switch words[0] {
	case "watch":
		if len(words) < 2 && envKey == "" {
			fmt.Fprintf(w.c.stderr, "Invalid command %s (command type or key is not provided)\n", l)
			return nil
		}
		spec, err := parseWatchLine(words, envKey, envRange)
		if err != nil {
			return fail(exitBadArgs, "%v", err)
		}
		key, ops, err := spec.watchOps()
		if err != nil {
			fmt.Fprintf(w.c.stderr, "Invalid command %s (%v)\n", l, err)
			return nil
		}
		wc := cl.Watch(ctx, key, ops...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.print(wc, spec.exec); err != nil {
				select {
				case w.failed <- err:
				default:
				}
			}
		}()
	case "progress":
		if err := cl.RequestProgress(ctx); err != nil {
			return fail(exitError, "%v", err)
		}
	default:
		fmt.Fprintf(w.c.stderr, "Invalid command %s (only support watch)\n", l)
	}
	return nil
}

// watchPrinter prints watch responses and runs the exec command per
// event. Several watches of an interactive session share it; one response
// is printed (and its commands run) at a time.
type watchPrinter struct {
	c      *cmdCtx
	mu     sync.Mutex
	failed chan error
}

// print handles the responses of one watch until it ends. It fails only
// when the exec command fails.
func (w *watchPrinter) print(wc client.WatchChan, execArgs []string) error {
	for resp := range wc {
		if err := w.one(&resp, execArgs); err != nil {
			return err
		}
	}
	return nil
}

func (w *watchPrinter) one(resp *client.WatchResponse, execArgs []string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if resp.Canceled {
		fmt.Fprintf(w.c.stderr, "watch was canceled (%v)\n", resp.Err())
	}
	if resp.IsProgressNotify() {
		fmt.Fprintf(w.c.stdout, "progress notify: %d\n", resp.Header.GetRevision())
	}
	if err := w.c.p.watch(resp); err != nil {
		return err
	}
	if len(execArgs) == 0 {
		return nil
	}
	for _, ev := range resp.Events {
		if err := runForEvent(w.c, execArgs, resp.Header.GetRevision(), (*mvccpb.Event)(ev)); err != nil {
			fmt.Fprintf(w.c.stderr, "command %q error (%v)\n", execArgs, err)
			return silent(exitError)
		}
	}
	return nil
}

// runForEvent runs the exec command with the event in its environment.
func runForEvent(c *cmdCtx, execArgs []string, rev int64, ev *mvccpb.Event) error {
	cmd := exec.Command(execArgs[0], execArgs[1:]...)
	cmd.Env = append(os.Environ(),
		fmt.Sprintf("ETCD_WATCH_REVISION=%d", rev),
		fmt.Sprintf("ETCD_WATCH_EVENT_TYPE=%q", ev.GetType()),
		fmt.Sprintf("ETCD_WATCH_KEY=%q", ev.GetKv().GetKey()),
		fmt.Sprintf("ETCD_WATCH_VALUE=%q", ev.GetKv().GetValue()),
	)
	cmd.Stdout, cmd.Stderr = c.stdout, c.stderr
	return cmd.Run()
}

// cancelReason is the server's reason for canceling the watch, which the
// client reports only through Err.
func cancelReason(r *client.WatchResponse) string {
	if !r.Canceled || r.CompactRevision != 0 {
		return ""
	}
	if err := r.Err(); err != nil && err.Error() != "client: watch canceled" {
		return err.Error()
	}
	return ""
}
