package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/cairnkv/cairn/tools/benchmark/stats"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// txnMixedConfig is a parsed txn-mixed command: total transactions, each
// holding either one range (a read) or one put (a write), in the ratio
// rwRatio reads per write. Reads and writes are reported separately,
// because a mix's single average would hide what each costs.
type txnMixedConfig struct {
	total        int64
	keys         keySpec
	valSize      int
	rwRatio      float64
	serializable bool
	endRange     string
	limit        int64
}

func parseTxnMixed(g *globalConfig, args []string, stderr io.Writer) (*workload, error) {
	c := &txnMixedConfig{}
	var consistency string
	fs := newCommandFlags("txn-mixed", g, &c.total, stderr)
	c.keys.register(fs)
	fs.IntVar(&c.valSize, "val-size", 256, "value size in bytes of the writes")
	fs.Float64Var(&c.rwRatio, "rw-ratio", 1, "reads per write: a txn is a read with probability ratio/(1+ratio)")
	fs.StringVar(&consistency, "consistency", "l", "l for linearizable, s for serializable reads")
	fs.StringVar(&c.endRange, "end-range", "", "range end of the reads, which start at key 0 (default: the end of the key space, so reads cover every key written)")
	fs.Int64Var(&c.limit, "limit", 1000, "maximum keys per read (0 means no limit)")
	if err := parseNoPositional(fs, args); err != nil {
		return nil, err
	}
	serializable, err := parseConsistency(consistency)
	c.serializable = serializable
	if err := validateAll(err, checkTotal(c.total), c.keys.validate(), checkValSize(c.valSize),
		checkRatio(c.rwRatio), checkLimit(c.limit)); err != nil {
		return nil, err
	}
	return &workload{name: "txn-mixed", total: c.total, run: c.run}, nil
}

func checkRatio(r float64) error {
	if r < 0 || math.IsInf(r, 0) || math.IsNaN(r) {
		return fmt.Errorf("%w: --rw-ratio must be a finite number >= 0", errUsage)
	}
	return nil
}

// isRead decides whether txn seq is a read. It hashes seq instead of
// drawing from a client's generator so that the split depends only on
// --total and --rw-ratio, not on which client claimed which txn: the
// planned numbers of reads and writes are then known before the run.
func (c *txnMixedConfig) isRead(seq int64) bool {
	p := c.rwRatio / (1 + c.rwRatio)
	return float64(splitmix64(uint64(seq))>>11)/(1<<53) < p
}

// splitmix64 is a fixed bijective mixer of 64-bit integers, spreading
// consecutive sequence numbers uniformly.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// plannedReads counts the reads among the total txns.
func (c *txnMixedConfig) plannedReads() int64 {
	n := int64(0)
	for seq := range c.total {
		if c.isRead(seq) {
			n++
		}
	}
	return n
}

// source returns client's request builder: the same read every time, or
// a put to a key of the key space.
func (c *txnMixedConfig) source(client int) func(seq int64) (*pb.TxnRequest, bool) {
	key, end := c.keys.covering()
	if c.endRange != "" {
		end = []byte(c.endRange)
	}
	read := &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{
		RequestRange: &pb.RangeRequest{Key: key, RangeEnd: end, Limit: c.limit, Serializable: c.serializable},
	}}}}
	value := fixedValue(c.valSize)
	pick := c.keys.picker(client)
	return func(seq int64) (*pb.TxnRequest, bool) {
		if c.isRead(seq) {
			return read, true
		}
		put := &pb.PutRequest{Key: c.keys.encode(pick(seq)), Value: value}
		return &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: put}}}}, false
	}
}

// mixedResult is the txn-mixed report; its JSON form nests the two
// latency reports.
type mixedResult struct {
	Planned      int64                `json:"planned"`
	NotSent      int64                `json:"not_sent"`
	Reads        *stats.Report        `json:"reads"`
	Writes       *stats.Report        `json:"writes"`
	ServerMemory []stats.ServerMemory `json:"server_memory,omitempty"`
}

func (c *txnMixedConfig) run(ctx context.Context, g *globalConfig, conns []*grpc.ClientConn, stdout, stderr io.Writer) error {
	fmt.Fprintf(stderr, "benchmark: txn-mixed, %d txns (%g reads per write), %d clients over %d connections to %v\n",
		c.total, c.rwRatio, g.clients, len(conns), g.resolved)
	kvs := kvClients(conns, g.clients)
	sources := make([]func(int64) (*pb.TxnRequest, bool), len(kvs))
	for i := range sources {
		sources[i] = c.source(i)
	}
	reads, writes := stats.NewRecorder(g.sampleLimit()), stats.NewRecorder(g.sampleLimit())
	bar := startProgress(g, stderr, c.total, func() int64 { return reads.Count() + writes.Count() })
	elapsed := runPool(ctx, len(kvs), c.total, g.newLimiter(), func(client int, seq int64) {
		req, isRead := sources[client](seq)
		start := time.Now()
		_, err := kvs[client].Txn(ctx, req)
		lat := time.Since(start)
		if isRead {
			reads.Record(lat, err)
		} else {
			writes.Record(lat, err)
		}
	})
	bar.finish()
	noteInterrupt(ctx, stderr)

	plannedReads := c.plannedReads()
	res := &mixedResult{
		Planned: c.total,
		Reads:   reads.Report(plannedReads, elapsed, stats.ReportOptions{Unit: "Reads"}),
		Writes:  writes.Report(c.total-plannedReads, elapsed, stats.ReportOptions{Unit: "Writes"}),
	}
	res.NotSent = res.Reads.NotSent + res.Writes.NotSent
	var memErr error
	res.ServerMemory, memErr = serverMemory(g.pids)
	err := writeSections(stdout, g.precise, []section{
		{"Reads (txn with one range)", res.Reads},
		{"Writes (txn with one put)", res.Writes},
	}, res.ServerMemory)
	if err != nil {
		return err
	}
	if err := writeJSONFile(g, res); err != nil {
		return err
	}
	return memErr
}
