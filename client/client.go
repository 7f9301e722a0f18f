package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/resolver/manual"

	"github.com/cairnkv/cairn/pkg/defaults"
)

// Errors of the client itself (server errors are rpctypes errors).
var (
	ErrNoEndpoints  = errors.New("client: no endpoints given")
	ErrClientClosed = errors.New("client: closed")
)

// roundRobin is the service config that gives every endpoint its own
// sub-connection and rotates requests over the ready ones.
const roundRobin = `{"loadBalancingConfig":[{"round_robin":{}}]}`

// schemeSeq makes every client's resolver scheme unique.
var schemeSeq atomic.Uint64

// Client talks to a cairn or etcd cluster. It is safe for concurrent use.
// The embedded interfaces are the API; Close releases everything.
type Client struct {
	KV
	Lease
	Watcher
	Cluster
	Maintenance
	Auth

	cfg      Config
	tokens   *tokens
	lg       *zap.Logger
	conn     *grpc.ClientConn
	resolver *manual.Resolver
	ctx      context.Context
	cancel   context.CancelFunc
	bg       sync.WaitGroup // background loops (auto sync)

	// mu guards the endpoints and serialises resolver updates, so that a
	// health check never hands gRPC a list older than SetEndpoints'.
	mu        sync.RWMutex
	endpoints []endpoint
	usable    []endpoint // the endpoints gRPC balances over
	epGen     uint64     // bumped by SetEndpoints

	closeOnce sync.Once
}

// New connects to cfg.Endpoints.
func New(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if cfg.Token != "" && (cfg.Username != "" || cfg.Password != "") {
		return nil, ErrMutuallyExclusiveCfg
	}
	eps, err := parseEndpoints(cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, lg: cfg.Logger, endpoints: eps, usable: eps}
	c.ctx, c.cancel = context.WithCancel(cfg.Context)
	c.resolver = manual.NewBuilderWithScheme(fmt.Sprintf("cairn%d", schemeSeq.Add(1)))
	c.resolver.InitialState(resolverState(eps))
	c.conn, err = grpc.NewClient(c.resolver.Scheme()+":///endpoints", c.dialOptions(c.resolver, eps)...)
	if err != nil {
		c.cancel()
		return nil, err
	}
	c.Auth = newAuth(c)
	c.tokens = newTokens(cfg, c.Auth.Authenticate)
	if cfg.DialTimeout > 0 {
		if err := c.waitReady(cfg.DialTimeout); err != nil {
			c.cancel()
			c.conn.Close()
			return nil, err
		}
	}
	c.KV = newKV(c)
	c.Lease = newLessor(c)
	c.Watcher = newWatcher(c)
	c.Cluster = newCluster(c)
	c.Maintenance = newMaintenance(c)
	if err := c.authenticate(); err != nil {
		c.Close()
		return nil, err
	}
	if cfg.AutoSyncInterval > 0 {
		c.bg.Add(1)
		go c.autoSync()
	}
	if cfg.HealthCheckInterval > 0 {
		c.bg.Add(1)
		go c.healthCheck()
	}
	return c, nil
}

// authenticate gets the client's first token, within DialTimeout when set.
func (c *Client) authenticate() error {
	ctx, cancel := c.ctx, context.CancelFunc(func() {})
	if c.cfg.DialTimeout > 0 {
		ctx, cancel = context.WithTimeout(c.ctx, c.cfg.DialTimeout)
	}
	defer cancel()
	return c.tokens.fetch(ctx)
}

// dialOptions are the gRPC options of the client's conn; endpoint-specific
// conns (Maintenance) share them.
func (c *Client) dialOptions(r *manual.Resolver, eps []endpoint) []grpc.DialOption {
	recv := defaults.Positive(c.cfg.MaxCallRecvMsgSize, math.MaxInt32)
	connectTimeout := defaults.Positive(c.cfg.DialTimeout, defaultConnectTimeout)
	opts := []grpc.DialOption{
		grpc.WithResolvers(r),
		grpc.WithDefaultServiceConfig(roundRobin),
		grpc.WithTransportCredentials(c.credentials(eps)),
		grpc.WithContextDialer(dial),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2,
				MaxDelay: defaultReconnectMax,
			},
			MinConnectTimeout: connectTimeout,
		}),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallSendMsgSize(c.cfg.MaxCallSendMsgSize),
			grpc.MaxCallRecvMsgSize(recv),
		),
		grpc.WithChainUnaryInterceptor(c.unaryRetry),
		grpc.WithChainStreamInterceptor(c.streamRetry),
	}
	if c.cfg.DialKeepAliveTime > 0 {
		opts = append(opts, grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time: c.cfg.DialKeepAliveTime, Timeout: c.cfg.DialKeepAliveTimeout,
			PermitWithoutStream: c.cfg.PermitWithoutStream,
		}))
	}
	return append(opts, c.cfg.DialOptions...)
}

func (c *Client) credentials(eps []endpoint) credentials.TransportCredentials {
	if c.cfg.TLS != nil {
		return credentials.NewTLS(c.cfg.TLS)
	}
	for _, ep := range eps {
		if ep.secure {
			return credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
		}
	}
	return insecure.NewCredentials()
}

// waitReady blocks until some sub-connection is ready.
func (c *Client) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	c.conn.Connect()
	for {
		s := c.conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if !c.conn.WaitForStateChange(ctx, s) {
			if c.cfg.Context.Err() != nil {
				return c.cfg.Context.Err()
			}
			return context.DeadlineExceeded
		}
	}
}

// Endpoints returns the endpoints in use.
func (c *Client) Endpoints() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return rawEndpoints(c.endpoints)
}

// SetEndpoints replaces the endpoints; gRPC opens sub-connections to new
// ones and closes those to removed ones.
func (c *Client) SetEndpoints(raws ...string) error {
	eps, err := parseEndpoints(raws)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endpoints, c.usable = eps, eps
	c.epGen++
	c.resolver.UpdateState(resolverState(eps))
	return nil
}

// usableEndpoints are the endpoints requests are balanced over: all of
// them, less those the health check steers requests off.
func (c *Client) usableEndpoints() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return rawEndpoints(c.usable)
}

// rawEndpoints are eps as they were given.
func rawEndpoints(eps []endpoint) []string {
	out := make([]string, len(eps))
	for i, ep := range eps {
		out[i] = ep.raw
	}
	return out
}

// Sync sets the endpoints to the client URLs of the cluster's voting
// members (learners serve few requests, so they are left out).
func (c *Client) Sync(ctx context.Context) error {
	resp, err := c.Cluster.MemberList(ctx)
	if err != nil {
		return err
	}
	var urls []string
	for _, m := range resp.Members {
		if !m.IsLearner {
			urls = append(urls, m.ClientURLs...)
		}
	}
	if len(urls) == 0 {
		return nil
	}
	return c.SetEndpoints(urls...)
}

func (c *Client) autoSync() {
	defer c.bg.Done()
	t := time.NewTicker(c.cfg.AutoSyncInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(c.ctx, c.cfg.AutoSyncInterval)
			if err := c.Sync(ctx); err != nil && c.ctx.Err() == nil {
				c.lg.Warn("auto sync of endpoints failed", zap.Error(err))
			}
			cancel()
		}
	}
}

// Ctx is the client's context; it is canceled by Close.
func (c *Client) Ctx() context.Context { return c.ctx }

// ActiveConnection is the client's gRPC conn, for the raw etcdserverpb
// clients.
func (c *Client) ActiveConnection() *grpc.ClientConn { return c.conn }

// Close stops watches, keep-alives and background loops and closes the
// connections. It is safe to call more than once.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.cancel()
		c.Watcher.Close()
		c.Lease.Close()
		c.bg.Wait()
		err = c.conn.Close()
	})
	return err
}
