package ctl

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cairnkv/cairn/client"
	"go.uber.org/zap"
)

func init() {
	register(
		&command{path: "version", usage: "Prints the version of etcdctl", run: versionCmd},
		&command{path: "get", usage: "Gets the key or a range of keys", flags: getFlags, run: getCmd},
		&command{path: "put", usage: "Puts the given key into the store", flags: putFlags, run: putCmd},
		&command{path: "del", usage: "Removes the specified key or range of keys [key, range_end)", flags: delFlags, run: delCmd},
		&command{path: "txn", usage: "Txn processes all the requests in one transaction", flags: txnFlags, run: txnCmd},
		&command{path: "compaction", usage: "Compacts the event history in etcd", flags: func(fs *flag.FlagSet, o *opts) {
			fs.BoolVar(&o.physical, "physical", false, "'true' to wait for compaction to physically remove all old revisions")
		}, run: compactionCmd},
	)
}

func versionCmd(c *cmdCtx) error {
	fmt.Fprintln(c.stdout, "etcdctl version:", etcdctlVersion)
	fmt.Fprintln(c.stdout, "API version:", apiVersion)
	return nil
}

// newClient connects as etcdctl does with the global flags.
func (c *cmdCtx) newClient() (*client.Client, error) {
	eps := strings.Split(c.g.endpoints, ",")
	cfg := client.Config{
		Endpoints:            eps,
		DialTimeout:          c.g.dialTimeout,
		DialKeepAliveTime:    c.g.keepAlive,
		DialKeepAliveTimeout: c.g.keepAliveTO,
		MaxCallSendMsgSize:   c.g.maxReqBytes,
		MaxCallRecvMsgSize:   c.g.maxRecvBytes,
		Logger:               zap.NewNop(),
	}
	if c.g.cert != "" || c.g.ca != "" || c.g.skipVerify {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.g.skipVerify}
		if c.g.cert != "" {
			cert, err := tls.LoadX509KeyPair(c.g.cert, c.g.key)
			if err != nil {
				return nil, fail(exitBadArgs, "%v", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		if c.g.ca != "" {
			b, err := os.ReadFile(c.g.ca)
			if err != nil {
				return nil, fail(exitBadArgs, "%v", err)
			}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(b)
			tc.RootCAs = pool
		}
		cfg.TLS = tc
	}
	if err := c.credentials(&cfg); err != nil {
		return nil, err
	}
	cl, err := client.New(cfg)
	if err != nil {
		// etcdctl's client connects lazily, so only its first
		// Authenticate can fail while the client is made: exit 2.
		if cfg.Username != "" && cfg.Password != "" {
			return nil, fail(exitBadConn, "%v", err)
		}
		return nil, fail(exitError, "%v", err)
	}
	return cl, nil
}

func (c *cmdCtx) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.g.commandTimeout)
}

func getFlags(fs *flag.FlagSet, o *opts) {
	fs.StringVar(&o.consistency, "consistency", "l", "Linearizable(l) or Serializable(s)")
	fs.StringVar(&o.order, "order", "", "Order of results; ASCEND or DESCEND (ASCEND by default)")
	fs.StringVar(&o.sortBy, "sort-by", "", "Sort target; CREATE, KEY, MODIFY, VALUE, or VERSION")
	fs.Int64Var(&o.limit, "limit", 0, "Maximum number of results")
	fs.BoolVar(&o.prefix, "prefix", false, "Get keys with matching prefix")
	fs.BoolVar(&o.fromKey, "from-key", false, "Get keys that are greater than or equal to the given key using byte compare")
	fs.Int64Var(&o.rev, "rev", 0, "Specify the kv revision")
	fs.BoolVar(&o.keysOnly, "keys-only", false, "Get only the keys")
	fs.BoolVar(&o.countOnly, "count-only", false, "Get only the count")
	fs.BoolVar(&o.printValueOnly, "print-value-only", false, `Only write values when using the "simple" output format`)
	fs.Int64Var(&o.minCreate, "min-create-rev", 0, "Minimum create revision")
	fs.Int64Var(&o.maxCreate, "max-create-rev", 0, "Maximum create revision")
	fs.Int64Var(&o.minMod, "min-mod-rev", 0, "Minimum modification revision")
	fs.Int64Var(&o.maxMod, "max-mod-rev", 0, "Maximum modification revision")
	fs.BoolVar(&o.stream, "stream", false, "Use the RangeStream RPC")
}

// getOp turns get's flags and arguments into the key and options of one
// Get, refusing bad combinations with etcdctl's messages in etcdctl's order.
func getOp(o *opts, args []string) (string, []client.OpOption, error) {
	if err := checkGetArgs(o, args); err != nil {
		return "", nil, err
	}
	// An unknown consistency ends cairnctl here, before the checks below,
	// as in etcdctl.
	serializable := isSerializable(o.consistency)
	if len(args) > 1 && (o.prefix || o.fromKey) {
		return "", nil, fail(exitBadArgs, "too many arguments, only accept one argument when `--prefix` or `--from-key` is set")
	}
	sorting, err := sortOption(o.order, o.sortBy)
	if err != nil {
		return "", nil, err
	}
	filters, err := revisionFilters(o)
	if err != nil {
		return "", nil, err
	}
	key, ops := getRange(o, args)
	if serializable {
		ops = append(ops, client.WithSerializable())
	}
	ops = append(ops, client.WithLimit(o.limit), sorting)
	if o.rev > 0 {
		ops = append(ops, client.WithRev(o.rev))
	}
	if o.keysOnly {
		ops = append(ops, client.WithKeysOnly())
	}
	if o.countOnly {
		ops = append(ops, client.WithCountOnly())
	}
	return key, append(ops, filters...), nil
}

// checkGetArgs refuses flag combinations get cannot serve.
func checkGetArgs(o *opts, args []string) error {
	switch {
	case len(args) == 0:
		return fail(exitBadArgs, "get command needs one argument as key and an optional argument as range_end")
	case o.prefix && o.fromKey:
		return fail(exitBadArgs, "`--prefix` and `--from-key` cannot be set at the same time, choose one")
	case o.keysOnly && o.countOnly:
		return fail(exitBadArgs, "`--keys-only` and `--count-only` cannot be set at the same time, choose one")
	}
	return nil
}

// getRange is the key get reads and the option that makes it a range: an
// explicit end, a prefix, or everything from the key on (an empty key
// under --prefix or --from-key means the whole key space).
func getRange(o *opts, args []string) (string, []client.OpOption) {
	key := args[0]
	switch {
	case len(args) > 1:
		return key, []client.OpOption{client.WithRange(args[1])}
	case (o.prefix || o.fromKey) && key == "":
		return "\x00", []client.OpOption{client.WithFromKey()}
	case o.prefix:
		return key, []client.OpOption{client.WithPrefix()}
	case o.fromKey:
		return key, []client.OpOption{client.WithFromKey()}
	}
	return key, nil
}

var (
	sortOrders  = map[string]client.SortOrder{"": client.SortNone, "ASCEND": client.SortAscend, "DESCEND": client.SortDescend}
	sortTargets = map[string]client.SortTarget{"": client.SortByKey, "KEY": client.SortByKey,
		"CREATE": client.SortByCreateRevision, "MODIFY": client.SortByModRevision,
		"VALUE": client.SortByValue, "VERSION": client.SortByVersion}
)

// sortOption reads --order and --sort-by (case does not matter).
func sortOption(order, by string) (client.OpOption, error) {
	o, ok := sortOrders[strings.ToUpper(order)]
	if !ok {
		return nil, fail(exitBadFeature, "bad sort order %v", order)
	}
	t, ok := sortTargets[strings.ToUpper(by)]
	if !ok {
		return nil, fail(exitBadFeature, "bad sort target %v", by)
	}
	return client.WithSort(t, o), nil
}

// revisionFilters reads the --min/max-create/mod-rev flags; 0 is unset.
func revisionFilters(o *opts) ([]client.OpOption, error) {
	var ops []client.OpOption
	for _, f := range []struct {
		min, max         int64
		name             string
		withMin, withMax func(int64) client.OpOption
	}{
		{o.minCreate, o.maxCreate, "CreateRev", client.WithMinCreateRev, client.WithMaxCreateRev},
		{o.minMod, o.maxMod, "ModRev", client.WithMinModRev, client.WithMaxModRev},
	} {
		if f.min > 0 {
			ops = append(ops, f.withMin(f.min))
		}
		if f.max > 0 {
			if f.min > f.max {
				return nil, fail(exitBadFeature, "getMin%s(=%v) > getMax%s(=%v)", f.name, f.min, f.name, f.max)
			}
			ops = append(ops, f.withMax(f.max))
		}
	}
	return ops, nil
}

func isSerializable(c string) bool {
	switch c {
	case "s":
		return true
	case "l":
		return false
	}
	fmt.Fprintf(os.Stderr, "unknown consistency flag %q\n", c)
	os.Exit(exitBadFeature)
	return false
}

func getCmd(c *cmdCtx) error {
	key, ops, err := getOp(c.o, c.args)
	if err != nil {
		return err
	}
	if c.o.countOnly && c.p.format != "fields" {
		return fail(exitBadArgs, "--count-only is only for `--write-out=fields`")
	}
	if c.o.printValueOnly && c.p.format != "simple" {
		return fail(exitBadArgs, "print-value-only is only for `--write-out=simple`")
	}
	return request(c, func(ctx context.Context, cl *client.Client) (*client.GetResponse, error) {
		return cl.Get(ctx, key, ops...)
	}, c.p.get)
}

func putFlags(fs *flag.FlagSet, o *opts) {
	fs.StringVar(&o.lease, "lease", "0", "lease ID (in hexadecimal) to attach to the key")
	fs.BoolVar(&o.prevKV, "prev-kv", false, "return the previous key-value pair before modification")
	fs.BoolVar(&o.ignoreValue, "ignore-value", false, "updates the key using its current value")
	fs.BoolVar(&o.ignoreLease, "ignore-lease", false, "updates the key using its current lease")
}

func argOrStdin(args []string, stdin io.Reader, i int) (string, error) {
	if i < len(args) {
		return args[i], nil
	}
	b, err := io.ReadAll(stdin)
	if err != nil || len(b) == 0 {
		return "", fmt.Errorf("no input")
	}
	return string(b), nil
}

func putOp(o *opts, args []string, stdin io.Reader) (string, string, []client.OpOption, error) {
	const needs = "put command needs 1 argument and input from stdin or 2 arguments"
	if len(args) == 0 {
		return "", "", nil, fail(exitBadArgs, needs)
	}
	key := args[0]
	if o.ignoreValue && len(args) > 1 {
		return "", "", nil, fail(exitBadArgs, "put command needs only 1 argument when 'ignore-value' is set")
	}
	var value string
	if !o.ignoreValue {
		v, err := argOrStdin(args, stdin, 1)
		if err != nil {
			return "", "", nil, fail(exitBadArgs, needs)
		}
		value = v
	}
	id, err := strconv.ParseInt(o.lease, 16, 64)
	if err != nil {
		return "", "", nil, fail(exitBadArgs, "bad lease ID (%w), expecting ID in Hex", err)
	}
	var ops []client.OpOption
	if id != 0 {
		ops = append(ops, client.WithLease(client.LeaseID(id)))
	}
	// The boolean flags map one to one onto options.
	for _, f := range []struct {
		set bool
		op  func() client.OpOption
	}{{o.prevKV, client.WithPrevKV}, {o.ignoreValue, client.WithIgnoreValue}, {o.ignoreLease, client.WithIgnoreLease}} {
		if f.set {
			ops = append(ops, f.op())
		}
	}
	return key, value, ops, nil
}

func putCmd(c *cmdCtx) error {
	key, val, ops, err := putOp(c.o, c.args, c.stdin)
	if err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (*client.PutResponse, error) {
		return cl.Put(ctx, key, val, ops...)
	}, c.p.put)
}

func delFlags(fs *flag.FlagSet, o *opts) {
	fs.BoolVar(&o.prefix, "prefix", false, "delete keys with matching prefix")
	fs.BoolVar(&o.prevKV, "prev-kv", false, "return deleted key-value pairs")
	fs.BoolVar(&o.fromKey, "from-key", false, "delete keys that are greater than or equal to the given key using byte compare")
	fs.BoolVar(&o.rangeDel, "range", false, "delete range of keys")
}

func delOp(o *opts, args []string, stderr io.Writer, wait bool) (string, []client.OpOption, error) {
	if len(args) == 0 || len(args) > 2 {
		return "", nil, fail(exitBadArgs, "del command needs one argument as key and an optional argument as range_end")
	}
	if o.prefix && o.fromKey {
		return "", nil, fail(exitBadArgs, "`--prefix` and `--from-key` cannot be set at the same time, choose one")
	}
	var ops []client.OpOption
	key := args[0]
	if len(args) > 1 {
		if o.prefix || o.fromKey {
			return "", nil, fail(exitBadArgs, "too many arguments, only accept one argument when `--prefix` or `--from-key` is set")
		}
		ops = append(ops, client.WithRange(args[1]))
		if !o.rangeDel && wait {
			fmt.Fprintf(stderr, "Warning: Keys between %q and %q will be deleted. Please interrupt the command within next 2 seconds to cancel. "+
				"You can provide `--range` flag to avoid the delay.\n", args[0], args[1])
			time.Sleep(2 * time.Second)
		}
	}
	if o.prefix {
		if key == "" {
			key = "\x00"
			ops = append(ops, client.WithFromKey())
		} else {
			ops = append(ops, client.WithPrefix())
		}
	}
	if o.prevKV {
		ops = append(ops, client.WithPrevKV())
	}
	if o.fromKey {
		if key == "" {
			key = "\x00"
		}
		ops = append(ops, client.WithFromKey())
	}
	return key, ops, nil
}

func delCmd(c *cmdCtx) error {
	key, ops, err := delOp(c.o, c.args, c.stderr, true)
	if err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (*client.DeleteResponse, error) {
		return cl.Delete(ctx, key, ops...)
	}, c.p.del)
}

func txnFlags(fs *flag.FlagSet, o *opts) {
	fs.BoolVar(&o.interactive, "interactive", false, "Input transaction in interactive mode")
	fs.BoolVar(&o.interactive, "i", false, "shorthand for --interactive")
}

func txnCmd(c *cmdCtx) error {
	if len(c.args) != 0 {
		return fail(exitBadArgs, "txn command does not accept argument")
	}
	r := bufio.NewReader(c.stdin)
	prompt := func(s string) {
		if c.o.interactive {
			fmt.Fprintln(c.stdout, s)
		}
	}
	prompt("compares:")
	cmps, err := readParsed(r, parseCompare)
	if err != nil {
		return err
	}
	prompt("success requests (get, put, del):")
	thenOps, err := readParsed(r, parseRequest)
	if err != nil {
		return err
	}
	prompt("failure requests (get, put, del):")
	elseOps, err := readParsed(r, parseRequest)
	if err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (*client.TxnResponse, error) {
		return cl.Txn(ctx).If(cmps...).Then(thenOps...).Else(elseOps...).Commit()
	}, c.p.txn)
}

func readLines(r *bufio.Reader, each func(string) error) error {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return fail(exitInvalidInput, "%v", err)
		}
		line = strings.TrimSpace(line)
		if line == "" {
			return nil
		}
		if err := each(line); err != nil {
			return err
		}
	}
}

// readParsed parses each line of one section of txn's input with parse
// (parseCompare, parseRequest); a line it refuses is invalid input.
func readParsed[T any](r *bufio.Reader, parse func(string) (T, error)) (items []T, err error) {
	err = readLines(r, func(line string) error {
		item, err := parse(line)
		if err != nil {
			return &exitErr{code: exitInvalidInput, err: err}
		}
		items = append(items, item)
		return nil
	})
	return items, err
}

var argRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'[^']*'|[^'"\s]\S*[^'"\s]?`)

// argify splits a txn request line into words, unquoting quoted ones.
func argify(s string) []string {
	var out []string
	for _, a := range argRE.FindAllString(s, -1) {
		if len(a) >= 2 && a[0] == '"' {
			if u, err := strconv.Unquote(a); err == nil {
				a = u
			}
		} else if len(a) >= 2 && a[0] == '\'' {
			a = a[1 : len(a)-1]
		}
		out = append(out, a)
	}
	return out
}

func parseRequest(line string) (client.Op, error) {
	args := argify(line)
	bad := fmt.Errorf("invalid txn request: %s", line)
	if len(args) < 2 {
		return client.Op{}, fmt.Errorf("invalid txn compare request: %s", line)
	}
	var o opts
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	switch args[0] {
	case "get":
		getFlags(fs, &o)
	case "put":
		putFlags(fs, &o)
	case "del", "delete":
		delFlags(fs, &o)
	default:
		return client.Op{}, bad
	}
	flags, pos, err := split(fs, args[1:])
	if err != nil {
		return client.Op{}, bad
	}
	if err := fs.Parse(flags); err != nil {
		return client.Op{}, bad
	}
	switch args[0] {
	case "get":
		key, ops, err := getOp(&o, pos)
		if err != nil {
			return client.Op{}, err
		}
		return client.OpGet(key, ops...), nil
	case "put":
		key, val, ops, err := putOp(&o, pos, strings.NewReader(""))
		if err != nil {
			return client.Op{}, err
		}
		return client.OpPut(key, val, ops...), nil
	default:
		key, ops, err := delOp(&o, pos, io.Discard, false)
		if err != nil {
			return client.Op{}, err
		}
		return client.OpDelete(key, ops...), nil
	}
}

func parseCompare(line string) (client.Cmp, error) {
	var key, op, val string
	parts := strings.SplitN(line, "(", 2)
	if len(parts) != 2 {
		return client.Cmp{}, fmt.Errorf("malformed comparison: %s", line)
	}
	target := parts[0]
	n, serr := fmt.Sscanf(parts[1], "%q) %s %q", &key, &op, &val)
	if n != 3 {
		return client.Cmp{}, fmt.Errorf("malformed comparison: %s; got %s(%q) %s %q", line, target, key, op, val)
	}
	if serr != nil {
		return client.Cmp{}, fmt.Errorf("malformed comparison: %s (%w)", line, serr)
	}
	switch op {
	case "=", "!=", ">", "<":
	default:
		return client.Cmp{}, fmt.Errorf("invalid txn compare request: %s", line)
	}
	if target == "val" || target == "value" {
		return client.Compare(client.Value(key), op, val), nil
	}
	t, ok := integerTargets[target]
	if !ok {
		return client.Cmp{}, fmt.Errorf("malformed comparison: %s (unknown target %s)", line, target)
	}
	v, err := strconv.ParseInt(val, t.base, 64)
	if err != nil {
		return client.Cmp{}, fmt.Errorf("invalid txn compare request: %s", line)
	}
	return client.Compare(t.of(key), op, v), nil
}

// integerTarget is a compare target whose value is an integer, written in
// base (lease IDs in hex, as etcdctl prints them).
type integerTarget struct {
	of   func(key string) client.Cmp
	base int
}

// integerTargets are etcdctl's integer compare targets, by the names it
// accepts.
var integerTargets = map[string]integerTarget{
	"ver": {client.Version, 10}, "version": {client.Version, 10},
	"c": {client.CreateRevision, 10}, "create": {client.CreateRevision, 10},
	"m": {client.ModRevision, 10}, "mod": {client.ModRevision, 10},
	"lease": {client.LeaseValue, 16},
}

func compactionCmd(c *cmdCtx) error {
	rev, err := c.intArg("compaction command needs 1 argument", 10, exitError, "%v")
	if err != nil {
		return err
	}
	var ops []client.CompactOption
	if c.o.physical {
		ops = append(ops, client.WithCompactPhysical())
	}
	return request(c, func(ctx context.Context, cl *client.Client) (*client.CompactResponse, error) {
		return cl.Compact(ctx, rev, ops...)
	}, func(*client.CompactResponse) error {
		fmt.Fprintln(c.stdout, "compacted revision", rev)
		return nil
	})
}
