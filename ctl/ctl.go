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
	"strconv"
	"strings"
	"time"

	"github.com/cairnkv/cairn/pkg/fileutil"
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
	fs.IntVar(&g.maxReqBytes, "max-request-bytes", 0, "client-side request send limit in bytes (if 0, it defaults to 2.0 MiB (2 * 1024 * 1024).)")
	fs.IntVar(&g.maxRecvBytes, "max-recv-bytes", 0, "client-side response receive limit in bytes (if 0, it defaults to \"math.MaxInt32\")")
	fs.BoolVar(&g.insecure, "insecure-transport", true, "disable transport security for client connections")
	fs.BoolVar(&g.insecureDisc, "insecure-discovery", true, "accept insecure SRV records describing cluster endpoints")
	fs.BoolVar(&g.skipVerify, "insecure-skip-tls-verify", false, "skip server certificate verification (CAUTION: this option should be enabled only for testing purposes)")
	fs.StringVar(&g.cert, "cert", "", "identify secure client using this TLS certificate file")
	fs.StringVar(&g.key, "key", "", "identify secure client using this TLS key file")
	fs.StringVar(&g.ca, "cacert", "", "verify certificates of TLS-enabled secure servers using this CA bundle")
	fs.StringVar(&g.token, "auth-jwt-token", "", "JWT token used for authentication (if this option is used, --user and --password should not be set)")
	fs.StringVar(&g.user, "user", "", "username[:password] for authentication (prompt if password is not supplied)")
	fs.StringVar(&g.password, "password", "", "password for authentication (if this option is used, --user option shouldn't include password)")
	fs.StringVar(&g.discoverySrv, "discovery-srv", "", "domain name to query for SRV records describing cluster endpoints")
	fs.StringVar(&g.discoverySrv, "d", "", "shorthand for --discovery-srv")
	fs.StringVar(&g.discoveryName, "discovery-srv-name", "", "service name to query when using DNS discovery")
}

// env is the process environment, a seam for tests.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// stderrIsTerminal turns on progress output meant for a person.
	stderrIsTerminal bool
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
	mirror                                                       mirrorOpts // make-mirror
	check                                                        checkOpts  // check perf, check datascale
	ttl                                                          int        // lock, elect
	listen                                                       bool       // elect -l
}

// cmdCtx is what a command's run sees.
type cmdCtx struct {
	env
	g    *globals
	o    *opts
	args []string
	// dashAt is how many of args precede a "--" on the command line, or -1.
	dashAt int
	set    map[string]bool // flags given explicitly
	p      *printer
}

var commands []*command

func register(cs ...*command) { commands = append(commands, cs...) }

// Main runs cairnctl with args (without the program name) and returns the
// exit status.
func Main(args []string) int {
	return run(args, env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, stderrIsTerminal: fileutil.IsTerminal(os.Stderr)})
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
	registerHelp(fs, &node{})
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

// scanned is a command line split into flags and positional arguments.
type scanned struct {
	flags []string // each as --name or --name=value
	pos   []string
	// dashAt is how many positional arguments precede "--", or -1.
	dashAt int
}

// scan separates flag arguments from positional ones as pflag does: "--"
// ends the flags, "--name value", "--name=value", "-x value", "-xvalue".
// On an unknown flag it returns what it scanned so far with the error.
func scan(fs *flag.FlagSet, args []string) (scanned, error) {
	s := scanned{dashAt: -1}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			s.dashAt = len(s.pos)
			s.pos = append(s.pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			s.pos = append(s.pos, a)
			continue
		}
		name, val, hasVal, err := flagWord(fs, a)
		if err != nil {
			return s, err
		}
		if _, takes := valueFlag(fs, name); takes && !hasVal {
			if i+1 >= len(args) {
				return s, needsArg(a, name)
			}
			i++
			val, hasVal = args[i], true
		}
		if hasVal {
			s.flags = append(s.flags, "--"+name+"="+val)
		} else {
			s.flags = append(s.flags, "--"+name)
		}
	}
	return s, nil
}

// flagWord reads one flag argument: its name and any value attached.
func flagWord(fs *flag.FlagSet, a string) (name, val string, hasVal bool, err error) {
	if strings.HasPrefix(a, "--") {
		name, val, hasVal = strings.Cut(a[2:], "=")
		if known, _ := valueFlag(fs, name); !known {
			return "", "", false, fmt.Errorf("unknown flag: --%s", name)
		}
		return name, val, hasVal, nil
	}
	name, rest := a[1:2], a[2:]
	known, takes := valueFlag(fs, name)
	if !known {
		return "", "", false, fmt.Errorf("unknown shorthand flag: '%s' in %s", name, a)
	}
	if rest == "" {
		return name, "", false, nil
	}
	if takes || rest[0] == '=' {
		return name, strings.TrimPrefix(rest, "="), true, nil
	}
	return "", "", false, fmt.Errorf("unknown shorthand flag: '%s' in %s", rest[:1], a)
}

func needsArg(a, name string) error {
	if strings.HasPrefix(a, "--") {
		return fmt.Errorf("flag needs an argument: --%s", name)
	}
	return fmt.Errorf("flag needs an argument: '%s' in %s", name, a)
}

// split is scan for callers that need only flags and positionals.
func split(fs *flag.FlagSet, args []string) (flags, pos []string, err error) {
	s, err := scan(fs, args)
	return s.flags, s.pos, err
}

// setFlags applies scanned flags to fs, reporting a bad value in pflag's
// words.
func setFlags(fs *flag.FlagSet, flags []string) error {
	short := shorthands(fs)
	for _, a := range flags {
		name, val, hasVal := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !hasVal {
			val = "true"
		}
		if err := fs.Set(name, val); err != nil {
			long := name
			if len(name) == 1 {
				long = strings.TrimPrefix(fs.Lookup(name).Usage, "shorthand for --")
			}
			shown := "--" + long
			if s := short[long]; s != "" {
				shown = "-" + s + ", --" + long
			}
			return fmt.Errorf("invalid argument %q for %q flag: %v", val, shown, valueError(fs.Lookup(name), val, err))
		}
	}
	return nil
}

// valueError is the parse error pflag reports for val.
func valueError(f *flag.Flag, val string, setErr error) error {
	var err error
	switch kind, _ := flagKind(f); kind {
	case "":
		_, err = strconv.ParseBool(val)
	case "int":
		_, err = strconv.ParseInt(val, 0, 64)
	case "uint":
		_, err = strconv.ParseUint(val, 0, 64)
	case "duration":
		_, err = time.ParseDuration(val)
	}
	if err == nil {
		return setErr
	}
	return err
}

func dispatch(args []string, e env) error {
	root := buildTree()
	first, ferr := scan(allFlags(), args)
	n, used := root.resolve(first.pos)
	if ferr != nil {
		return usageError(e.stderr, n, ferr)
	}
	switch {
	case n == root && len(first.pos) > 0:
		return unknownCommand(e.stderr, root, first.pos[0])
	case n.parent == root && n.name == "help":
		return helpCommand(e, root, first.pos[used:])
	}
	fs := flag.NewFlagSet(n.path, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g := &globals{}
	g.register(fs)
	o := &opts{}
	if n.cmd != nil && n.cmd.flags != nil {
		n.cmd.flags(fs, o)
	}
	registerHelp(fs, n)
	sc, err := scan(fs, args)
	if err == nil {
		err = setFlags(fs, sc.flags)
	}
	if err != nil {
		return usageError(e.stderr, n, err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["help"] || set["h"] || n.cmd == nil {
		io.WriteString(e.stdout, n.helpText())
		return nil
	}
	if err := applyEnv(fs, set, e.getenv); err != nil {
		return fail(exitBadArgs, "%v", err)
	}
	p, err := newPrinter(e.stdout, g.writeOut, g.hex)
	if err != nil {
		return err
	}
	p.valueOnly = o.printValueOnly
	dashAt := -1
	if sc.dashAt >= 0 {
		dashAt = sc.dashAt - used
	}
	return n.cmd.run(&cmdCtx{env: e, g: g, o: o, args: sc.pos[used:], dashAt: dashAt, set: set, p: p})
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
