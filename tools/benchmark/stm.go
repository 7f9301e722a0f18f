package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/cairnkv/cairn/client"
	"github.com/cairnkv/cairn/client/concurrency"
	"github.com/cairnkv/cairn/tools/benchmark/stats"
	"google.golang.org/grpc"
)

// stmConfig is a parsed stm command: total software transactions (this
// repository's client/concurrency STM), each reading keysPerTxn distinct
// keys chosen at random among keys and writing writePercent of them.
// A transaction's latency covers every attempt until it commits, so
// conflicts show up as latency, and the retries are counted.
type stmConfig struct {
	total        int64
	isolation    concurrency.Isolation
	keys         int
	keysPerTxn   int
	writePercent int
	valSize      int
}

func parseSTM(g *globalConfig, args []string, stderr io.Writer) (*workload, error) {
	c := &stmConfig{}
	var isolation string
	fs := newCommandFlags("stm", g, &c.total, stderr)
	fs.StringVar(&isolation, "isolation", "r", "read committed (c), repeatable reads (r), serializable (s) or serializable snapshot (ss)")
	fs.IntVar(&c.keys, "keys", 1, "number of distinct keys the transactions choose from")
	fs.IntVar(&c.keysPerTxn, "keys-per-txn", 1, "distinct keys each transaction reads")
	fs.IntVar(&c.writePercent, "txn-wr-percent", 50, "percentage of the keys read that each transaction also writes")
	fs.IntVar(&c.valSize, "val-size", 8, "value size in bytes")
	if err := parseNoPositional(fs, args); err != nil {
		return nil, err
	}
	iso, err := parseIsolation(isolation)
	c.isolation = iso
	if err := validateAll(err, checkTotal(c.total), c.validate(), checkValSize(c.valSize)); err != nil {
		return nil, err
	}
	return &workload{name: "stm", total: c.total, run: c.run, ownClients: true}, nil
}

func parseIsolation(s string) (concurrency.Isolation, error) {
	switch s {
	case "c":
		return concurrency.ReadCommitted, nil
	case "r":
		return concurrency.RepeatableReads, nil
	case "s":
		return concurrency.Serializable, nil
	case "ss":
		return concurrency.SerializableSnapshot, nil
	default:
		return 0, fmt.Errorf("%w: --isolation must be c, r, s or ss, got %q", errUsage, s)
	}
}

func (c *stmConfig) validate() error {
	switch {
	case c.keys < 1:
		return fmt.Errorf("%w: --keys must be at least 1", errUsage)
	case c.keysPerTxn < 1 || c.keysPerTxn > c.keys:
		return fmt.Errorf("%w: --keys-per-txn must be between 1 and --keys (%d)", errUsage, c.keys)
	case c.writePercent < 0 || c.writePercent > 100:
		return fmt.Errorf("%w: --txn-wr-percent must be between 0 and 100", errUsage)
	}
	return nil
}

// stmKey names key number i; fixed width keeps the keys in numeric order.
func stmKey(i int) string { return fmt.Sprintf("benchmark/stm/%010d", i) }

// pickKeys returns n distinct key numbers below space, in random order.
func pickKeys(rng *rand.Rand, space, n int) []int {
	if n*2 > space {
		return rng.Perm(space)[:n] // dense: a permutation beats rejection
	}
	seen := make(map[int]bool, n)
	out := make([]int, 0, n)
	for len(out) < n {
		if k := rng.IntN(space); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// stmResult is the stm report: the transactions' latencies plus how often
// the STM had to run a transaction's function again after a conflict.
type stmResult struct {
	Txns         *stats.Report        `json:"txns"`
	ApplyRuns    int64                `json:"apply_runs"`
	Retries      int64                `json:"retries"`
	ServerMemory []stats.ServerMemory `json:"server_memory,omitempty"`
}

func (c *stmConfig) run(ctx context.Context, g *globalConfig, _ []*grpc.ClientConn, stdout, stderr io.Writer) error {
	fmt.Fprintf(stderr, "benchmark: stm, %d txns of %d keys among %d, %d clients over %d connections to %v\n",
		c.total, c.keysPerTxn, c.keys, g.clients, g.conns, g.resolved)
	conns, err := dialClients(g)
	if err != nil {
		return err
	}
	defer func() {
		for _, cl := range conns {
			cl.Close()
		}
	}()
	rngs := make([]*rand.Rand, g.clients)
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(uint64(i), 0x57a))
	}
	value := string(fixedValue(c.valSize))
	var applyRuns atomic.Int64
	rec := stats.NewRecorder(g.sampleLimit())
	bar := startProgress(g, stderr, c.total, rec.Count)
	elapsed := runPool(ctx, g.clients, c.total, g.newLimiter(), func(client int, _ int64) {
		keys := pickKeys(rngs[client], c.keys, c.keysPerTxn)
		writes := c.keysPerTxn * c.writePercent / 100
		apply := func(s concurrency.STM) error {
			applyRuns.Add(1)
			for i, k := range keys {
				s.Get(stmKey(k))
				if i < writes {
					s.Put(stmKey(k), value)
				}
			}
			return nil
		}
		start := time.Now()
		_, err := concurrency.NewSTM(conns[client%len(conns)], apply,
			concurrency.WithIsolation(c.isolation), concurrency.WithAbortContext(ctx))
		rec.Record(time.Since(start), err)
	})
	bar.finish()
	noteInterrupt(ctx, stderr)

	res := &stmResult{Txns: rec.Report(c.total, elapsed, stats.ReportOptions{Unit: "Txns"}), ApplyRuns: applyRuns.Load()}
	res.Retries = max(res.ApplyRuns-res.Txns.Succeeded-res.Txns.Failed, 0)
	var memErr error
	res.ServerMemory, memErr = serverMemory(g.pids)
	if err := writeSections(stdout, g.precise, []section{{"STM transactions (latency: first attempt to commit)", res.Txns}}, nil); err != nil {
		return err
	}
	p := &errWriter{w: stdout}
	p.printf("\nRetries:\t%d (the function ran %d times for %d transactions)\n", res.Retries, res.ApplyRuns, res.Txns.Succeeded+res.Txns.Failed)
	if p.err != nil {
		return p.err
	}
	if err := stats.WriteServerMemory(stdout, res.ServerMemory); err != nil {
		return err
	}
	if err := writeJSONFile(g, res); err != nil {
		return err
	}
	return memErr
}

// dialClients opens --conns clients of this repository's client library,
// spread round-robin over the resolved endpoints. Client-side retries are
// off: the STM's own conflict loop is what is measured, and a failed
// request should show as an error rather than as a slow transaction.
func dialClients(g *globalConfig) ([]*client.Client, error) {
	out := make([]*client.Client, 0, g.conns)
	for i := range g.conns {
		cl, err := client.New(client.Config{
			Endpoints:   []string{g.resolved[i%len(g.resolved)]},
			DialTimeout: g.dialTimeout,
			MaxRetries:  -1,
		})
		if err != nil {
			for _, c := range out {
				c.Close()
			}
			return nil, fmt.Errorf("dial %s: %w", g.resolved[i%len(g.resolved)], err)
		}
		out = append(out, cl)
	}
	return out, nil
}
