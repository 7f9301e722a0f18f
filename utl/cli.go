package utl

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/cairnkv/cairn/pkg/flagargs"
)

// Exit codes, as etcd's cobrautl.
const (
	exitOK         = 0
	exitGeneric    = 1
	exitBadFeature = 4
	exitBadArgs    = 128
)

// exitError carries the exit code an error ends the command with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func badArgs(format string, a ...any) error {
	return &exitError{code: exitBadArgs, err: fmt.Errorf(format, a...)}
}

// env is one invocation: its output streams and the global flags.
type env struct {
	stdout, stderr io.Writer
	writeOut       string
	timeout        time.Duration
	// describe, when set, receives the flag set of the leaf command run
	// instead of parsing and running it (see completion.go).
	describe func(fs *flag.FlagSet)
}

// registerGlobals adds the flags every command accepts, defaulting to their
// current values so that a global flag given before the command carries on.
func (e *env) registerGlobals(fs *flag.FlagSet) {
	fs.StringVar(&e.writeOut, "write-out", e.writeOut, "set the output format (fields, json, protobuf, simple, table)")
	fs.StringVar(&e.writeOut, "w", e.writeOut, "shorthand for --write-out")
	fs.DurationVar(&e.timeout, "timeout", e.timeout, "time to wait to obtain a file lock on db file, 0 to block indefinitely")
}

func (e *env) logger() *zap.Logger {
	cfg := zap.NewProductionEncoderConfig()
	cfg.EncodeTime = zapcore.RFC3339TimeEncoder
	cfg.EncodeLevel = zapcore.LowercaseLevelEncoder
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(cfg), zapcore.AddSync(e.stderr), zapcore.InfoLevel)
	return zap.New(core)
}

// command is one (sub)command: either it runs, or it dispatches to subs.
type command struct {
	name  string
	short string
	run   func(e *env, args []string) error
	subs  []*command
}

func rootCommand() *command {
	return &command{name: "cairnutl", short: "An administrative command line tool for etcd3 data (cairn's etcdutl).", subs: []*command{
		{name: "defrag", short: "Defragments the storage of the etcd", run: runDefrag},
		{name: "snapshot", short: "Manages etcd node snapshots", subs: []*command{
			{name: "restore", short: "Restores an etcd member snapshot to an etcd directory", run: runRestore},
			{name: "restore-cluster", short: "Restores a snapshot into the data dirs of every member of a new cluster", run: runRestoreCluster},
			{name: "status", short: "Gets backend snapshot status of a given file", run: runStatus},
		}},
		{name: "hashkv", short: "Prints the KV history hash of a given file", run: runHashKV},
		{name: "migrate", short: "Migrates schema of etcd data dir files to make them compatible with different etcd version", run: runMigrate},
		{name: "version", short: "Prints the version of cairnutl", run: runVersion},
		{name: "completion", short: "Generate completion script", run: runCompletion},
	}}
}

// Main runs cairnutl with args (without the program name) and returns the
// exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, writeOut: "simple", timeout: 10 * time.Second}
	err := dispatch(e, rootCommand(), args, "cairnutl")
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		// cobra reports these itself before etcdutl's main does again;
		// tests/compat/cairnutl holds cairnutl to etcdutl's exact stderr.
		fmt.Fprintln(stderr, "Error:", err)
		fmt.Fprintln(stderr, ue.usage)
	}
	fmt.Fprintln(stderr, "Error:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitGeneric
}

// dispatch parses the global flags in front of the next command name and
// runs that command (by unique prefix, as etcdutl allows).
func dispatch(e *env, c *command, args []string, path string) error {
	fs := newFlagSet(path)
	e.registerGlobals(fs)
	if err := fs.Parse(args); err != nil {
		return helpOr(err, e, c, path)
	}
	rest := fs.Args()
	if len(rest) == 0 || rest[0] == "help" {
		printUsage(e.stdout, c, path)
		return nil
	}
	sub, err := findSub(c, rest[0], path)
	if err != nil {
		return err
	}
	if sub.run == nil {
		return dispatch(e, sub, rest[1:], path+" "+sub.name)
	}
	return sub.run(e, rest[1:])
}

func helpOr(err error, e *env, c *command, path string) error {
	if errors.Is(err, flag.ErrHelp) {
		printUsage(e.stdout, c, path)
	}
	return err
}

func findSub(c *command, name, path string) (*command, error) {
	var matches []*command
	for _, s := range c.subs {
		if s.name == name {
			return s, nil
		}
		if strings.HasPrefix(s.name, name) {
			matches = append(matches, s)
		}
	}
	if len(matches) == 1 {
		return matches[0], nil
	}
	return nil, &usageError{err: fmt.Errorf("unknown command %q for %q", name, path), usage: fmt.Sprintf("Run '%s --help' for usage.", path)}
}

func printUsage(w io.Writer, c *command, path string) {
	fmt.Fprintf(w, "%s\n\nUsage:\n  %s [command]\n\nAvailable Commands:\n", c.short, path)
	subs := append([]*command(nil), c.subs...)
	sort.Slice(subs, func(i, j int) bool { return subs[i].name < subs[j].name })
	for _, s := range subs {
		fmt.Fprintf(w, "  %-10s %s\n", s.name, s.short)
	}
	fmt.Fprintf(w, "\nGlobal Flags:\n  --timeout duration   time to wait to obtain a file lock on db file, 0 to block indefinitely (default 10s)\n"+
		"  -w, --write-out string   set the output format (fields, json, protobuf, simple, table) (default \"simple\")\n")
}

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseCommand parses a leaf command's flags (plus the global ones).
func (e *env) parseCommand(name string, args []string, define func(fs *flag.FlagSet)) ([]string, error) {
	fs := newFlagSet(name)
	e.registerGlobals(fs)
	if define != nil {
		define(fs)
	}
	if e.describe != nil {
		e.describe(fs)
		return nil, errDescribed
	}
	pos, err := flagargs.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(e.stdout, commandUsage(name, fs))
		return nil, err
	}
	if err != nil {
		return nil, &usageError{err: cobraFlagError(err), usage: commandUsage(name, fs)}
	}
	return pos, nil
}

// usageError is an error in how a command was called: like cobra, cairnutl
// prints it with the command's usage before the final "Error:" line.
type usageError struct {
	err   error
	usage string
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// withUsage turns err into a usageError of the command name.
func withUsage(err error, name string, define func(fs *flag.FlagSet)) error {
	fs := newFlagSet(name)
	(&env{}).registerGlobals(fs)
	if define != nil {
		define(fs)
	}
	return &usageError{err: err, usage: commandUsage(name, fs)}
}

func commandUsage(name string, fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage:\n  cairnutl %s [flags]\n\nFlags:\n", name)
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return b.String()
}

// cobraFlagError words an unknown flag as cobra does.
func cobraFlagError(err error) error {
	const undefined = "flag provided but not defined: -"
	msg := err.Error()
	if !strings.HasPrefix(msg, undefined) {
		return err
	}
	name := strings.TrimPrefix(msg, undefined)
	if len(name) == 1 {
		return fmt.Errorf("unknown shorthand flag: '%s' in -%s", name, name)
	}
	return fmt.Errorf("unknown flag: --%s", name)
}
