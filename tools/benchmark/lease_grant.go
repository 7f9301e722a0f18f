package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/cairnkv/cairn/tools/benchmark/stats"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// leaseGrantConfig is a parsed lease-grant command: the clients grant
// total leases between them, each client with one LeaseGrant in flight (a
// raft proposal each, like a put). A grant's latency is its RPC's. The
// leases are revoked after the run, untimed, so later runs do not pay for
// their expiry.
type leaseGrantConfig struct {
	total int64
	ttl   int64
}

func parseLeaseGrant(g *globalConfig, args []string, stderr io.Writer) (*workload, error) {
	c := &leaseGrantConfig{}
	if err := parseLeaseFlags("lease-grant", g, args, stderr, &c.total, &c.ttl); err != nil {
		return nil, err
	}
	return &workload{name: "lease-grant", total: c.total, run: c.run}, nil
}

func (c *leaseGrantConfig) run(ctx context.Context, g *globalConfig, conns []*grpc.ClientConn, stdout, stderr io.Writer) error {
	fmt.Fprintf(stderr, "benchmark: lease-grant, %d grants (TTL %ds), %d clients over %d connections\n",
		c.total, c.ttl, g.clients, len(conns))
	granted := &grantedLeases{}
	defer granted.revokeAll(conns, g.dialTimeout, c.ttl, stderr)
	rec := stats.NewRecorder(g.sampleLimit())
	bar := startProgress(g, stderr, c.total, rec.Count)
	elapsed := runPool(ctx, g.clients, c.total, g.newLimiter(), func(client int, _ int64) {
		lc := pb.NewLeaseClient(conns[client%len(conns)])
		start := time.Now()
		resp, err := lc.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: c.ttl})
		lat := time.Since(start)
		if err == nil && resp.GetError() != "" {
			err = fmt.Errorf("lease grant: %s", resp.GetError())
		}
		if err == nil {
			granted.add(resp.GetID())
		}
		rec.Record(lat, err)
	})
	bar.finish()
	noteInterrupt(ctx, stderr)
	return writeReport(g, rec.Report(c.total, elapsed, stats.ReportOptions{Unit: "Grants"}), stdout)
}

// grantedLeases collects the IDs the run granted, from every client.
type grantedLeases struct {
	mu  sync.Mutex
	ids []int64
}

func (l *grantedLeases) add(id int64) {
	l.mu.Lock()
	l.ids = append(l.ids, id)
	l.mu.Unlock()
}

// revokeAll revokes the leases over the connections, a few at a time.
// Failures are only noted: the leases expire on their own after ttl.
func (l *grantedLeases) revokeAll(conns []*grpc.ClientConn, timeout time.Duration, ttl int64, stderr io.Writer) {
	const parallel = 16
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failed   int
		firstErr error
	)
	next := make(chan int64)
	for w := range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lc := pb.NewLeaseClient(conns[w%len(conns)])
			for id := range next {
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				_, err := lc.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: id})
				cancel()
				if err != nil {
					mu.Lock()
					failed++
					firstErr = cmpOr(firstErr, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, id := range l.ids {
		next <- id
	}
	close(next)
	wg.Wait()
	if failed > 0 {
		fmt.Fprintf(stderr, "benchmark: could not revoke %d leases (they expire after %ds): %v\n", failed, ttl, firstErr)
	}
}
