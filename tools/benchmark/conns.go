package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
)

// grpcTarget turns an endpoint as users write it for etcd (host:port, or
// http://host:port) into a gRPC target. TLS is not supported, so https is
// refused rather than silently sent in plain text.
func grpcTarget(endpoint string) (string, error) {
	switch {
	case strings.HasPrefix(endpoint, "https://"):
		return "", fmt.Errorf("endpoint %q: TLS is not supported", endpoint)
	case strings.HasPrefix(endpoint, "http://"):
		return strings.TrimPrefix(endpoint, "http://"), nil
	default:
		return endpoint, nil
	}
}

// dialReady opens a connection and waits until it is ready, so that
// connection setup is never counted in the first requests' latency and an
// unreachable endpoint fails fast instead of producing a report of errors.
func dialReady(ctx context.Context, endpoint string, timeout time.Duration) (*grpc.ClientConn, error) {
	target, err := grpcTarget(endpoint)
	if err != nil {
		return nil, err
	}
	cc, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// Range responses can be large; do not turn them into errors.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32)),
	)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", endpoint, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cc.Connect()
	for state := cc.GetState(); state != connectivity.Ready; state = cc.GetState() {
		if !cc.WaitForStateChange(ctx, state) {
			cc.Close()
			return nil, fmt.Errorf("dial %s: not ready after %v (last state %v)", endpoint, timeout, state)
		}
	}
	return cc, nil
}

// dialPool opens n connections spread round-robin over endpoints.
func dialPool(ctx context.Context, endpoints []string, n int, timeout time.Duration) ([]*grpc.ClientConn, error) {
	conns := make([]*grpc.ClientConn, 0, n)
	for i := range n {
		cc, err := dialReady(ctx, endpoints[i%len(endpoints)], timeout)
		if err != nil {
			closeAll(conns)
			return nil, err
		}
		conns = append(conns, cc)
	}
	return conns, nil
}

func closeAll(conns []*grpc.ClientConn) {
	for _, cc := range conns {
		cc.Close()
	}
}

// findLeader asks each endpoint for its status and returns the endpoint
// whose own member ID is the leader it reports.
func findLeader(ctx context.Context, endpoints []string, timeout time.Duration) (string, error) {
	var errs []error
	for _, ep := range endpoints {
		isLeader, err := reportsItselfLeader(ctx, ep, timeout)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if isLeader {
			return ep, nil
		}
	}
	return "", fmt.Errorf("no leader among %v: %w", endpoints, errors.Join(errs...))
}

func reportsItselfLeader(ctx context.Context, endpoint string, timeout time.Duration) (bool, error) {
	cc, err := dialReady(ctx, endpoint, timeout)
	if err != nil {
		return false, err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := pb.NewMaintenanceClient(cc).Status(ctx, &pb.StatusRequest{})
	if err != nil {
		return false, fmt.Errorf("status %s: %w", endpoint, err)
	}
	return resp.GetLeader() != 0 && resp.GetLeader() == resp.GetHeader().GetMemberId(), nil
}

// resolveEndpoints returns the endpoints the load goes to: the leader
// alone (--target-leader), every voting member (--all-members), or the
// endpoints as given.
func resolveEndpoints(ctx context.Context, g *globalConfig) ([]string, error) {
	endpoints := g.endpointList()
	switch {
	case g.targetLeader:
		leader, err := findLeader(ctx, endpoints, g.dialTimeout)
		if err != nil {
			return nil, err
		}
		return []string{leader}, nil
	case g.allMembers:
		return memberEndpoints(ctx, endpoints, g.dialTimeout)
	default:
		return endpoints, nil
	}
}

// memberEndpoints asks the first endpoint that answers for the member list
// and returns one client URL of every voting member.
func memberEndpoints(ctx context.Context, endpoints []string, timeout time.Duration) ([]string, error) {
	var errs []error
	for _, ep := range endpoints {
		urls, err := listMembers(ctx, ep, timeout)
		if err == nil {
			return urls, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("--all-members: %w", errors.Join(errs...))
}

func listMembers(ctx context.Context, endpoint string, timeout time.Duration) ([]string, error) {
	cc, err := dialReady(ctx, endpoint, timeout)
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := pb.NewClusterClient(cc).MemberList(ctx, &pb.MemberListRequest{Linearizable: true})
	if err != nil {
		return nil, fmt.Errorf("member list from %s: %w", endpoint, err)
	}
	var urls []string
	for _, m := range resp.GetMembers() {
		// A learner refuses most requests, and a member that has not
		// started yet has no client URL.
		if m.GetIsLearner() || len(m.GetClientURLs()) == 0 {
			continue
		}
		urls = append(urls, m.GetClientURLs()[0])
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("member list from %s has no voting member with a client URL", endpoint)
	}
	return urls, nil
}
