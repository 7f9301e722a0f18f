package client

import (
	"context"
	"crypto/tls"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/pkg/defaults"
)

// Defaults for zero Config fields.
const (
	DefaultMaxRetries         = 10
	DefaultBackoffWaitBetween = 50 * time.Millisecond
	DefaultBackoffMax         = time.Second
	DefaultMaxCallSendMsgSize = 2 * 1024 * 1024
	defaultKeepAliveTimeout   = 20 * time.Second
	defaultConnectTimeout     = 5 * time.Second
	defaultReconnectMax       = 2 * time.Second

	// DefaultHealthCheckInterval is how often a client checks its
	// endpoints when Config.HealthCheckInterval is zero. A second bounds
	// how long requests keep going to a member that was paused or cut off
	// from the quorum, at the cost of one Status call per endpoint per
	// second.
	DefaultHealthCheckInterval = time.Second
)

// Config configures a Client. Only Endpoints is required.
type Config struct {
	// Endpoints are the members' client URLs: http://host:port,
	// https://host:port, unix://path or a bare host:port.
	Endpoints []string

	// DialTimeout, when set, makes New wait until at least one endpoint is
	// connected; New fails with context.DeadlineExceeded otherwise.
	DialTimeout time.Duration

	// DialKeepAliveTime is the interval of the client's HTTP/2 pings; zero
	// disables them. DialKeepAliveTimeout is how long a ping may wait for its
	// answer before the connection is closed (default 20s).
	DialKeepAliveTime    time.Duration
	DialKeepAliveTimeout time.Duration
	// PermitWithoutStream sends pings even without active streams.
	PermitWithoutStream bool

	// TLS secures the connections. https endpoints without TLS use the
	// system's roots.
	TLS *tls.Config

	// Username and Password authenticate the client: it gets a token
	// when it connects, sends it with every request, and gets a new one
	// when the server stops accepting it. Without a password no
	// credentials are sent.
	Username string
	Password string
	// Token is a token obtained elsewhere (a JWT signed with the server's
	// key), sent as it is with every request. It excludes Username and
	// Password.
	Token string

	// MaxCallSendMsgSize and MaxCallRecvMsgSize limit request and response
	// sizes (defaults 2 MiB and unlimited).
	MaxCallSendMsgSize int
	MaxCallRecvMsgSize int

	// MaxRetries bounds the retries of one request (default 10); negative
	// disables retries.
	MaxRetries int
	// BackoffWaitBetween is the first retry's wait; each further retry
	// doubles it up to BackoffMax. Waits carry 10% jitter.
	BackoffWaitBetween time.Duration
	BackoffMax         time.Duration

	// AutoSyncInterval, when set, replaces the endpoints with the cluster's
	// client URLs (from MemberList, without learners) at this interval.
	AutoSyncInterval time.Duration

	// HealthCheckInterval is how often the client asks every endpoint for
	// its Status (default DefaultHealthCheckInterval; negative turns the
	// checks off). Requests then go only to endpoints that are voters,
	// know a leader and keep up with the cluster's raft index: a member
	// partitioned from the quorum, paused, or a learner gets no requests
	// while others are usable, so such a member costs the requests in
	// flight to it rather than every request the balancer sends it for as
	// long as it is gone. Reads also require a leader (see
	// WithRequireLeader): one sent to a leaderless member before the check
	// noticed fails at once and is retried on another.
	//
	// The checks are authenticated Status calls: they keep a simple token
	// in use, so it does not expire while the client lives. With checks
	// off the client balances over all endpoints as etcd's client does.
	HealthCheckInterval time.Duration

	// Context is the parent of the client's context: canceling it stops
	// every request, watch and keep-alive.
	Context context.Context

	// Logger logs retries and reconnects (default: none).
	Logger *zap.Logger

	// DialOptions are appended to the client's own gRPC dial options.
	DialOptions []grpc.DialOption
}

func (cfg Config) withDefaults() Config {
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	cfg.BackoffWaitBetween = defaults.Positive(cfg.BackoffWaitBetween, DefaultBackoffWaitBetween)
	cfg.BackoffMax = defaults.Positive(cfg.BackoffMax, DefaultBackoffMax)
	if cfg.MaxCallSendMsgSize == 0 {
		cfg.MaxCallSendMsgSize = DefaultMaxCallSendMsgSize
	}
	if cfg.DialKeepAliveTimeout == 0 {
		cfg.DialKeepAliveTimeout = defaultKeepAliveTimeout
	}
	if cfg.HealthCheckInterval == 0 {
		cfg.HealthCheckInterval = DefaultHealthCheckInterval
	}
	if cfg.Context == nil {
		cfg.Context = context.Background()
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return cfg
}
