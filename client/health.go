package client

import (
	"context"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
)

// memberHealth is what one health check learned about an endpoint.
type memberHealth struct {
	ok        bool // Status answered
	learner   bool
	hasLeader bool
	index     uint64 // raft index
}

// healthState remembers the previous check, to notice stalled members.
type healthState struct {
	prevIndex map[string]uint64
	prevMax   uint64
}

// usable picks the endpoints that should take requests: those that answer,
// are voters, know a leader and whose raft index did not stall while the
// cluster's advanced. A member cut off from the quorum still answers
// pings, so only these signals reveal it. When nothing qualifies the
// client degrades to plain round robin (see fallback).
func (hs *healthState) usable(eps []endpoint, health map[string]memberHealth) []endpoint {
	var maxIndex uint64
	for _, h := range health {
		maxIndex = max(maxIndex, h.index)
	}
	var out []endpoint
	for _, ep := range eps {
		h := health[ep.raw]
		stalled := hs.prevIndex != nil && h.index == hs.prevIndex[ep.raw] &&
			maxIndex > hs.prevMax && h.index < maxIndex
		if h.ok && !h.learner && h.hasLeader && !stalled {
			out = append(out, ep)
		}
	}
	hs.prevIndex, hs.prevMax = map[string]uint64{}, maxIndex
	for raw, h := range health {
		hs.prevIndex[raw] = h.index
	}
	if len(out) == 0 {
		return fallback(eps, health)
	}
	return out
}

// fallback is what takes requests when no endpoint qualifies: the cluster
// is down or leaderless, or the checks timed out (on a loaded machine a
// check, which dials, may outlast its interval everywhere at once). What
// did not answer or looked stalled may be fine, so it stays; what answered
// as a learner or without a leader refuses requests whatever the others'
// state, so it stays out unless nothing else is left.
func fallback(eps []endpoint, health map[string]memberHealth) []endpoint {
	var out []endpoint
	for _, ep := range eps {
		h := health[ep.raw]
		if !h.ok || (!h.learner && h.hasLeader) {
			out = append(out, ep)
		}
	}
	if len(out) == 0 {
		return eps
	}
	return out
}

// healthCheck steers requests off unusable endpoints at
// HealthCheckInterval by handing the resolver only the usable ones.
func (c *Client) healthCheck() {
	defer c.bg.Done()
	t := time.NewTicker(c.cfg.HealthCheckInterval)
	defer t.Stop()
	var hs healthState
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			c.checkHealth(&hs)
		}
	}
}

// checkHealth runs one health check and hands gRPC the usable endpoints,
// unless SetEndpoints replaced the endpoints meanwhile: the check's verdict
// is then about a list no longer in use.
func (c *Client) checkHealth(hs *healthState) {
	c.mu.RLock()
	eps, gen := c.endpoints, c.epGen
	c.mu.RUnlock()
	health := c.checkAll(eps)
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.epGen {
		return
	}
	use := hs.usable(eps, health)
	if len(use) != len(eps) {
		c.lg.Info("steering requests off unhealthy endpoints", zap.Int("usable", len(use)), zap.Int("endpoints", len(eps)))
	}
	c.usable = use
	c.resolver.UpdateState(resolverState(use))
}

// checkAll asks every endpoint for its Status, in parallel.
func (c *Client) checkAll(eps []endpoint) map[string]memberHealth {
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.HealthCheckInterval)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := make(map[string]memberHealth, len(eps))
	for _, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := c.checkOne(ctx, ep.raw)
			mu.Lock()
			out[ep.raw] = h
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func (c *Client) checkOne(ctx context.Context, raw string) memberHealth {
	st, err := onEndpoint(c, raw, func(mc pb.MaintenanceClient) (*pb.StatusResponse, error) {
		return mc.Status(ctx, &pb.StatusRequest{})
	})
	if err != nil {
		return memberHealth{}
	}
	return memberHealth{ok: true, learner: st.IsLearner, hasLeader: st.Leader != 0, index: st.RaftIndex}
}
