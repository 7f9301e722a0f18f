package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cairnkv/cairn/tools/benchmark/stats"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// leaseConfig is a parsed lease-keepalive command: every client grants one
// lease (untimed), opens one LeaseKeepAlive stream (untimed), and then the
// clients send total keepalives between them, each client with one in
// flight. A keepalive's latency runs from just before its request is sent on
// the stream until the server's answer is received.
type leaseConfig struct {
	total int64
	ttl   int64
}

// errLeaseNotFound is recorded for a keepalive answered with TTL <= 0,
// which is how the server says the lease no longer exists.
var errLeaseNotFound = errors.New("keepalive answered with TTL <= 0: lease not found")

func parseLeaseKeepAlive(g *globalConfig, args []string, stderr io.Writer) (*workload, error) {
	c := &leaseConfig{}
	if err := parseLeaseFlags("lease-keepalive", g, args, stderr, &c.total, &c.ttl); err != nil {
		return nil, err
	}
	return &workload{name: "lease-keepalive", total: c.total, run: c.run}, nil
}

// parseLeaseFlags parses the flags the lease commands share: --total and
// --ttl (seconds, at least 1).
func parseLeaseFlags(name string, g *globalConfig, args []string, stderr io.Writer, total, ttl *int64) error {
	fs := newCommandFlags(name, g, total, stderr)
	fs.Int64Var(ttl, "ttl", 60, "TTL in seconds of each lease")
	if err := parseNoPositional(fs, args); err != nil {
		return err
	}
	if *ttl < 1 {
		return fmt.Errorf("%w: --ttl must be at least 1", errUsage)
	}
	return checkTotal(*total)
}

// leaseClient is one client: its lease and the stream it keeps it alive on.
type leaseClient struct {
	lc     pb.LeaseClient
	id     int64
	stream pb.Lease_LeaseKeepAliveClient // nil after a stream error until reopened
}

func (c *leaseConfig) run(ctx context.Context, g *globalConfig, conns []*grpc.ClientConn, stdout, stderr io.Writer) error {
	fmt.Fprintf(stderr, "benchmark: lease-keepalive, %d keepalives, %d clients (one lease and stream each) over %d connections\n",
		c.total, g.clients, len(conns))
	clients := make([]*leaseClient, g.clients)
	defer c.revokeAll(clients, g.dialTimeout, stderr)
	for i := range clients {
		lc := pb.NewLeaseClient(conns[i%len(conns)])
		grantCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := lc.LeaseGrant(grantCtx, &pb.LeaseGrantRequest{TTL: c.ttl})
		cancel()
		if err != nil {
			return fmt.Errorf("granting lease %d of %d: %w", i+1, len(clients), err)
		}
		if resp.GetError() != "" {
			return fmt.Errorf("granting lease %d of %d: %s", i+1, len(clients), resp.GetError())
		}
		clients[i] = &leaseClient{lc: lc, id: resp.GetID()}
	}
	streamCtx, stopStreams := context.WithCancel(ctx)
	defer stopStreams()
	for _, cl := range clients {
		if err := cl.open(streamCtx); err != nil {
			return fmt.Errorf("opening keepalive stream: %w", err)
		}
	}

	rec := stats.NewRecorder(g.sampleLimit())
	bar := startProgress(g, stderr, c.total, rec.Count)
	elapsed := runPool(streamCtx, len(clients), c.total, g.newLimiter(), func(client int, _ int64) {
		clients[client].keepAlive(streamCtx, rec)
	})
	bar.finish()
	noteInterrupt(ctx, stderr)
	return writeReport(g, rec.Report(c.total, elapsed, stats.ReportOptions{Unit: "Keepalives"}), stdout)
}

func (cl *leaseClient) open(ctx context.Context) error {
	stream, err := cl.lc.LeaseKeepAlive(ctx)
	if err != nil {
		return err
	}
	cl.stream = stream
	return nil
}

// keepAlive sends one keepalive and records it. A stream that failed
// earlier is reopened (untimed) first; if reopening fails, the keepalive is
// counted as failed.
func (cl *leaseClient) keepAlive(ctx context.Context, rec *stats.Recorder) {
	if cl.stream == nil {
		if err := cl.open(ctx); err != nil {
			rec.Record(0, err)
			return
		}
	}
	req := &pb.LeaseKeepAliveRequest{ID: cl.id}
	start := time.Now()
	err := cl.stream.Send(req)
	var resp *pb.LeaseKeepAliveResponse
	if err == nil {
		resp, err = cl.stream.Recv()
	}
	lat := time.Since(start)
	switch {
	case err != nil:
		cl.stream = nil
	case resp.GetID() != cl.id:
		err = fmt.Errorf("keepalive for lease %x answered for lease %x", cl.id, resp.GetID())
	case resp.GetTTL() <= 0:
		err = errLeaseNotFound
	}
	rec.Record(lat, err)
}

// revokeAll revokes the granted leases after the run, untimed. Failures are
// only noted: the leases expire on their own after --ttl.
func (c *leaseConfig) revokeAll(clients []*leaseClient, timeout time.Duration, stderr io.Writer) {
	failed := 0
	var firstErr error
	for _, cl := range clients {
		if cl == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		_, err := cl.lc.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: cl.id})
		cancel()
		if err != nil {
			failed++
			firstErr = cmpOr(firstErr, err)
		}
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "benchmark: could not revoke %d leases (they expire after %ds): %v\n", failed, c.ttl, firstErr)
	}
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
