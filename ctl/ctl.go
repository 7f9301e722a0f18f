// Package ctl implements cairnctl, a command-line client for cairn that
// accepts etcdctl v3.7's commands, flags, ETCDCTL_* environment variables
// and output formats.
package ctl

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// Exit codes, as etcdctl uses them.
const (
	exitSuccess      = 0
	exitError        = 1
	exitBadFeature   = 4
	exitInvalidInput = 3
	exitBadConn      = 2
	exitInterrupted  = 5
	exitBadArgs      = 128
)

// Version is cairnctl's own version.
const Version = "0.1.0"

// etcdctlVersion and apiVersion are what `version` reports, as etcdctl does.
const (
	etcdctlVersion = "3.7.3"
	apiVersion     = "3.7"
)

// exitErr carries an exit code up to Main.
type exitErr struct {
	code int
	err  error
}

func (e *exitErr) Error() string { return e.err.Error() }

func fail(code int, format string, a ...any) error {
	return &exitErr{code: code, err: fmt.Errorf(format, a...)}
}

// globals are etcdctl's global flags.
type globals struct {
	endpoints      string
	writeOut       string
	hex            bool
	debug          bool
	dialTimeout    time.Duration
	commandTimeout time.Duration
	keepAlive      time.Duration
	keepAliveTO    time.Duration
	maxReqBytes    int
	maxRecvBytes   int
	insecure       bool
	insecureDisc   bool
	skipVerify     bool
	cert, key, ca  string
	token          string
	user, password string
	discoverySrv   string
	discoveryName  string
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.endpoints, "endpoints", "127.0.0.1:2379", "gRPC endpoints")
	fs.BoolVar(&g.debug, "debug", false, "enable client-side debug logging")
	fs.StringVar(&g.writeOut, "write-out", "simple", "set the output format (fields, json, protobuf, simple, table)")
	fs.StringVar(&g.writeOut, "w", "simple", "shorthand for --write-out")
	fs.BoolVar(&g.hex, "hex", false, "print byte strings as hex encoded strings")
	fs.DurationVar(&g.dialTimeout, "dial-timeout", 2*time.Second, "dial timeout for client connections")
	fs.DurationVar(&g.commandTimeout, "command-timeout", 5*time.Second, "timeout for short running command (excluding dial timeout)")
	fs.DurationVar(&g.keepAlive, "keepalive-time", 2*time.Second, "keepalive time for client connections")
	fs.DurationVar(&g.keepAliveTO, "keepalive-timeout", 6*time.Second, "keepalive timeout for client connections")
	fs.IntVar(&g.maxReqBytes, "max-request-bytes", 0, "client-side request send limit in bytes")
	fs.IntVar(&g.maxRecvBytes, "max-recv-bytes", 0, "client-side response receive limit in bytes")
	fs.BoolVar(&g.insecure, "insecure-transport", true, "disable transport security for client connections")
	fs.BoolVar(&g.insecureDisc, "insecure-discovery", true, "accept insecure SRV records describing cluster endpoints")
	fs.BoolVar(&g.skipVerify, "insecure-skip-tls-verify", false, "skip server certificate verification")
	fs.StringVar(&g.cert, "cert", "", "identify secure client using this TLS certificate file")
	fs.StringVar(&g.key, "key", "", "identify secure client using this TLS key file")
	fs.StringVar(&g.ca, "cacert", "", "verify certificates of TLS-enabled secure servers using this CA bundle")
	fs.StringVar(&g.token, "auth-jwt-token", "", "JWT token used for authentication")
	fs.StringVar(&g.user, "user", "", "username[:password] for authentication")
	fs.StringVar(&g.password, "password", "", "password for authentication")
	fs.StringVar(&g.discoverySrv, "discovery-srv", "", "domain name to query for SRV records describing cluster endpoints")
	fs.StringVar(&g.discoverySrv, "d", "", "shorthand for --discovery-srv")
	fs.StringVar(&g.discoveryName, "discovery-srv-name", "", "service name to query when using DNS discovery")
}

// env is the process environment, a seam for tests.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// command is one leaf of the command tree.
type command struct {
	path  string // "lease grant"
	usage string
	flags func(fs *flag.FlagSet, o *opts)
	run   func(c *cmdCtx) error
}

// opts holds every command-specific flag; each command registers the ones
// it takes.
type opts struct {
	prefix, fromKey, prevKV, keysOnly, countOnly, printValueOnly bool
	consistency, order, sortBy                                   string
	limit, rev                                                   int64
	minCreate, maxCreate, minMod, maxMod                         int64
	lease                                                        string
	ignoreValue, ignoreLease, rangeDel                           bool
	interactive, progressNotify                                  bool
	keys, once                                                   bool
	peerURLs                                                     string
	learner                                                      bool
	cluster                                                      bool
	physical                                                     bool
	stream                                                       bool
	detail, noPassword                                           bool
	newUserPassword                                              string
	ttl                                                          int
	listen                                                       bool
}

// cmdCtx is what a command's run sees.
type cmdCtx struct {
	env
	g    *globals
	o    *opts
	args []string
	set  map[string]bool // flags given explicitly
	p    *printer
}

var commands []*command

func register(cs ...*command) { commands = append(commands, cs...) }

// Main runs cairnctl with args (without the program name) and returns the
// exit status.
func Main(args []string) int {
	return run(args, env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
}

func run(args []string, e env) int {
	err := dispatch(args, e)
	if err == nil {
		return exitSuccess
	}
	var ee *exitErr
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintln(e.stderr, "Error:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(e.stderr, "Error:", err)
	return exitError
}

// silent is an exit with no message.
func silent(code int) error { return &exitErr{code: code, err: errors.New("")} }

// valueFlag reports whether a flag named name takes a value in fs.
func valueFlag(fs *flag.FlagSet, name string) (known, takesValue bool) {
	f := fs.Lookup(name)
	if f == nil {
		return false, false
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return true, false
	}
	return true, true
}

// allFlags is a flag set with the global flags and every command's flags,
// used only to find the command words among the arguments.
func allFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("all", flag.ContinueOnError)
	var g globals
	g.register(fs)
	var o opts
	for _, c := range commands {
		if c.flags != nil {
			func() {
				defer func() { _ = recover() }() // flags redefined by several commands
				sub := flag.NewFlagSet("", flag.ContinueOnError)
				c.flags(sub, &o)
				sub.VisitAll(func(f *flag.Flag) {
					if fs.Lookup(f.Name) == nil {
						fs.Var(f.Value, f.Name, f.Usage)
					}
				})
			}()
		}
	}
	return fs
}

// split separates flag arguments from positional ones. After "--" every
// argument is positional.
func split(fs *flag.FlagSet, args []string) (flags, pos []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name := strings.TrimLeft(a, "-")
		if j := strings.IndexByte(name, '='); j >= 0 {
			flags = append(flags, a)
			continue
		}
		known, takes := valueFlag(fs, name)
		if !known {
			if a[1] != '-' {
				// A single dash starts shorthands, as cobra reads it.
				return nil, nil, fmt.Errorf("unknown shorthand flag: '%c' in %s", name[0], a)
			}
			return nil, nil, fmt.Errorf("unknown flag: %s", a)
		}
		flags = append(flags, a)
		if takes {
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("flag needs an argument: %s", a)
			}
			i++
			flags = append(flags, args[i])
		}
	}
	return flags, pos, nil
}

func findCommand(pos []string) (*command, []string) {
	var best *command
	bestN := 0
	for _, c := range commands {
		words := strings.Fields(c.path)
		if len(words) > len(pos) || len(words) <= bestN {
			continue
		}
		ok := true
		for i, w := range words {
			if pos[i] != w {
				ok = false
				break
			}
		}
		if ok {
			best, bestN = c, len(words)
		}
	}
	if best == nil {
		return nil, pos
	}
	return best, pos[bestN:]
}

func dispatch(args []string, e env) error {
	_, pos, err := split(allFlags(), args)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	c, _ := findCommand(pos)
	if c == nil {
		if len(pos) == 0 {
			fmt.Fprint(e.stdout, usage())
			return nil
		}
		return fail(exitBadArgs, "unknown command %q for \"cairnctl\"", strings.Join(pos, " "))
	}
	fs := flag.NewFlagSet(c.path, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g := &globals{}
	g.register(fs)
	o := &opts{}
	if c.flags != nil {
		c.flags(fs, o)
	}
	flags, pos, err := split(fs, args)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if err := fs.Parse(flags); err != nil {
		return fail(exitBadArgs, "%v", err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := applyEnv(fs, set, e.getenv); err != nil {
		return fail(exitBadArgs, "%v", err)
	}
	_, rest := findCommand(pos)
	p, err := newPrinter(e.stdout, g.writeOut, g.hex)
	if err != nil {
		return err
	}
	p.valueOnly = o.printValueOnly
	return c.run(&cmdCtx{env: e, g: g, o: o, args: rest, set: set, p: p})
}

// globalNames are the flags that ETCDCTL_* variables may set.
var globalNames = []string{
	"endpoints", "debug", "write-out", "hex", "dial-timeout", "command-timeout",
	"keepalive-time", "keepalive-timeout", "max-request-bytes", "max-recv-bytes",
	"insecure-transport", "insecure-discovery", "insecure-skip-tls-verify",
	"cert", "key", "cacert", "auth-jwt-token", "user", "password",
	"discovery-srv", "discovery-srv-name",
}

// applyEnv sets every global flag not given on the command line from its
// ETCDCTL_* variable (ETCDCTL_WRITE_OUT for --write-out).
func applyEnv(fs *flag.FlagSet, set map[string]bool, getenv func(string) string) error {
	for _, name := range globalNames {
		if set[name] || (name == "write-out" && set["w"]) || (name == "discovery-srv" && set["d"]) {
			continue
		}
		v := getenv("ETCDCTL_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")))
		if v == "" {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return fmt.Errorf("invalid value %q for ETCDCTL_%s: %v", v, strings.ToUpper(strings.ReplaceAll(name, "-", "_")), err)
		}
	}
	return nil
}

func usage() string {
	var b strings.Builder
	b.WriteString("NAME:\n\tcairnctl - A simple command line client for cairn (etcdctl-compatible).\n\nCOMMANDS:\n")
	var paths []string
	for _, c := range commands {
		paths = append(paths, fmt.Sprintf("  %-24s %s", c.path, c.usage))
	}
	sort.Strings(paths)
	b.WriteString(strings.Join(paths, "\n"))
	b.WriteString("\n")
	return b.String()
}
