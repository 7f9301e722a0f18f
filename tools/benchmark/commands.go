package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/pkg/flagargs"
)

// command turns a command's arguments into a workload. Global flags are
// registered on the command's flag set too, so they are accepted after the
// command name as well as before it.
type command func(g *globalConfig, args []string, stderr io.Writer) (*workload, error)

var commands = map[string]command{
	"put":     parsePut,
	"range":   parseRange,
	"txn-put": parseTxnPut,

	"watch-latency":   parseWatchLatency,
	"watch":           parseWatch,
	"lease-keepalive": parseLeaseKeepAlive,
	"lease-grant":     parseLeaseGrant,

	"txn-mixed": parseTxnMixed,
	"watch-get": parseWatchGet,
	"stm":       parseSTM,
}

// commandNames lists the commands in a fixed order for messages.
func commandNames() []string {
	return slices.Sorted(maps.Keys(commands))
}

const defaultTotal = 10000

// newCommandFlags builds a command's flag set with the global flags and
// --total already registered.
func newCommandFlags(name string, g *globalConfig, total *int64, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	g.register(fs)
	fs.Int64Var(total, "total", defaultTotal, "total number of requests")
	return fs
}

func checkTotal(total int64) error {
	if total < 1 {
		return fmt.Errorf("%w: --total must be at least 1", errUsage)
	}
	return nil
}

func parsePut(g *globalConfig, args []string, stderr io.Writer) (*workload, error) {
	var total int64
	var keys keySpec
	var valSize int
	fs := newCommandFlags("put", g, &total, stderr)
	keys.register(fs)
	fs.BoolVar(&keys.sequential, "sequential-keys", false, "use keys 0,1,2,... (mod key space) instead of random ones")
	fs.IntVar(&valSize, "val-size", 256, "value size in bytes")
	if err := parseNoPositional(fs, args); err != nil {
		return nil, err
	}
	if err := validateAll(checkTotal(total), keys.validate(), checkValSize(valSize)); err != nil {
		return nil, err
	}
	value := fixedValue(valSize)
	return &workload{name: "put", total: total, newSource: func(client int) requestSource {
		pick := keys.picker(client)
		return func(seq int64) rpc {
			req := &pb.PutRequest{Key: keys.encode(pick(seq)), Value: value}
			return func(ctx context.Context, kv pb.KVClient) error {
				_, err := kv.Put(ctx, req)
				return err
			}
		}
	}}, nil
}

func parseRange(g *globalConfig, args []string, stderr io.Writer) (*workload, error) {
	var total, limit int64
	var consistency string
	fs := newCommandFlags("range", g, &total, stderr)
	fs.StringVar(&consistency, "consistency", "l", "l for linearizable, s for serializable reads")
	fs.Int64Var(&limit, "limit", 0, "maximum keys per response (0 means no limit)")
	positional, err := flagargs.Parse(fs, args)
	if err != nil {
		return nil, err
	}
	if len(positional) < 1 || len(positional) > 2 {
		return nil, fmt.Errorf("%w: range takes <key> [end], got %d arguments", errUsage, len(positional))
	}
	serializable, err := parseConsistency(consistency)
	if err := validateAll(err, checkTotal(total), checkLimit(limit)); err != nil {
		return nil, err
	}
	key, end := []byte(positional[0]), rangeEnd(positional)
	return &workload{name: "range", total: total, newSource: func(int) requestSource {
		// Every range is identical, so each client reuses one message.
		req := &pb.RangeRequest{Key: key, RangeEnd: end, Limit: limit, Serializable: serializable}
		call := func(ctx context.Context, kv pb.KVClient) error {
			_, err := kv.Range(ctx, req)
			return err
		}
		return func(int64) rpc { return call }
	}}, nil
}

func rangeEnd(positional []string) []byte {
	if len(positional) < 2 {
		return nil
	}
	return []byte(positional[1])
}

func parseConsistency(c string) (serializable bool, err error) {
	switch c {
	case "l":
		return false, nil
	case "s":
		return true, nil
	default:
		return false, fmt.Errorf("%w: --consistency must be l or s, got %q", errUsage, c)
	}
}

func checkLimit(limit int64) error {
	if limit < 0 {
		return fmt.Errorf("%w: --limit must not be negative", errUsage)
	}
	return nil
}

func parseTxnPut(g *globalConfig, args []string, stderr io.Writer) (*workload, error) {
	var total int64
	var keys keySpec
	var valSize, ops int
	fs := newCommandFlags("txn-put", g, &total, stderr)
	keys.register(fs)
	fs.IntVar(&valSize, "val-size", 256, "value size in bytes")
	fs.IntVar(&ops, "txn-ops", 1, "number of puts per transaction")
	if err := parseNoPositional(fs, args); err != nil {
		return nil, err
	}
	if err := validateAll(checkTotal(total), keys.validate(), checkValSize(valSize), checkTxnOps(ops, keys.space)); err != nil {
		return nil, err
	}
	value := fixedValue(valSize)
	return &workload{name: "txn-put", total: total, newSource: func(client int) requestSource {
		pick := keys.picker(client)
		return func(seq int64) rpc {
			req := &pb.TxnRequest{Success: txnPuts(keys, pick(seq), ops, value)}
			return func(ctx context.Context, kv pb.KVClient) error {
				_, err := kv.Txn(ctx, req)
				return err
			}
		}
	}}, nil
}

// txnPuts builds n puts on consecutive keys starting at first. The keys
// must be distinct because a server rejects a transaction that writes the
// same key twice.
func txnPuts(keys keySpec, first int64, n int, value []byte) []*pb.RequestOp {
	ops := make([]*pb.RequestOp, n)
	for j := range ops {
		put := &pb.PutRequest{Key: keys.encode((first + int64(j)) % keys.space), Value: value}
		ops[j] = &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: put}}
	}
	return ops
}

func checkTxnOps(ops int, space int64) error {
	if ops < 1 || int64(ops) > space {
		return fmt.Errorf("%w: --txn-ops must be between 1 and --key-space-size (%d), since keys in a txn must differ", errUsage, space)
	}
	return nil
}

func checkValSize(n int) error {
	if n < 0 {
		return fmt.Errorf("%w: --val-size must not be negative", errUsage)
	}
	return nil
}

func parseNoPositional(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: %s takes no arguments, got %q", errUsage, fs.Name(), fs.Args())
	}
	return nil
}

// validateAll returns the first non-nil error.
func validateAll(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// fixedValue returns the value every write sends: random bytes from a fixed
// seed, so that values are not trivially compressible yet runs repeat.
func fixedValue(size int) []byte {
	rng := rand.New(rand.NewPCG(0x5eed, uint64(size)))
	v := make([]byte, size)
	for i := range v {
		v[i] = byte(rng.UintN(256))
	}
	return v
}
