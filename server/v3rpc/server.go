// Package v3rpc owns etcd's client gRPC surface: the KV and Maintenance
// services (and the standard health service) on top of a member.
//
// Handlers are thin. They validate a request with etcd's errors before it
// reaches the member, call the member through the Server interface, make
// sure every response carries a header, and map the member's sentinel
// errors (server/errs) to etcd's gRPC statuses (rpctypes). This package never
// decides anything about the data itself: that is the member's job.
package v3rpc

import (
	"context"
	"math"
	"runtime"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/cairnkv/cairn/server/metrics"
)

// Server is what the gRPC layer needs from the member itself
// (server/etcdserver implements it); the services come through Config.
// Errors are server/errs sentinels, gRPC statuses or context errors; the
// layer maps them to etcd's gRPC statuses.
type Server interface {
	// Header returns cluster id, member id, current revision and raft term,
	// for responses the layer builds itself.
	Header() *pb.ResponseHeader
}

// Config tunes the gRPC server.
type Config struct {
	// MaxRequestBytes is etcd's --max-request-bytes (0 means etcd's default,
	// 1.5 MiB); the gRPC receive limit adds grpcOverheadBytes to it.
	MaxRequestBytes uint
	// MaxTxnOps is etcd's --max-txn-ops (0 means etcd's default, 128).
	MaxTxnOps uint
	// MaxConcurrentStreams per HTTP/2 connection (0 means gRPC's default).
	MaxConcurrentStreams uint32
	// WatchProgressNotifyInterval is etcd's --watch-progress-notify-interval
	// (0 means etcd's default, 10 minutes; less than 100ms means 100ms).
	WatchProgressNotifyInterval time.Duration
	// KeepAliveMinTime is etcd's --grpc-keepalive-min-time: clients pinging
	// more often than this are disconnected (0 means gRPC's default, 5s).
	KeepAliveMinTime time.Duration
	// KeepAliveInterval is etcd's --grpc-keepalive-interval: how long a
	// connection may be idle before the server pings it (0 means gRPC's
	// default, 2h).
	KeepAliveInterval time.Duration
	// KeepAliveTimeout is etcd's --grpc-keepalive-timeout: how long the
	// server waits for a ping's answer before closing the connection (0
	// means gRPC's default, 20s).
	KeepAliveTimeout time.Duration
	// ElectionTimeout is how often a stream that requires a leader checks
	// for one; after maxNoLeaderChecks checks without a leader the stream is
	// ended with "no leader", as etcd does (0 means 1s).
	ElectionTimeout time.Duration
	// WarningUnaryRequestDuration is etcd's --warning-unary-request-duration:
	// unary requests slower than this are logged with their stats (0 means
	// etcd's 300ms).
	WarningUnaryRequestDuration time.Duration
	// KV serves the KV service; nil leaves it unregistered.
	KV KVServer
	// Watch serves the Watch service; nil leaves it unregistered.
	Watch WatchServer
	// Auth serves the Auth service; nil leaves it unregistered (a client
	// then gets Unimplemented, as from a server without auth).
	Auth AuthServer
	// Lease serves the Lease service; nil leaves it unregistered.
	Lease LeaseServer
	// Cluster serves the Cluster service; nil leaves it unregistered.
	Cluster ClusterServer
	// Maintenance serves the Maintenance service; nil leaves it
	// unregistered.
	Maintenance MaintenanceServer
	// StopGRPCServiceOnDefrag (feature gate) reports the gRPC health
	// service NOT_SERVING while a defragmentation runs.
	StopGRPCServiceOnDefrag bool
	// Logger may be nil.
	Logger *zap.Logger
}

// grpcOverheadBytes is the room etcd leaves on top of --max-request-bytes for
// the gRPC envelope, so a request of exactly the limit still arrives and is
// rejected (or accepted) by the member with etcd's own error.
const grpcOverheadBytes = 512 * 1024

// streamWorkers is the size of the gRPC server's goroutine pool for
// streams (unary calls included); a stream that finds every worker busy
// gets a goroutine of its own, as without a pool. 128 workers cut server
// CPU per put by ~10% against 2 under 100 concurrent clients, with the same
// peak RSS.
const streamWorkers = 128

// etcd's defaults, used for zero Config fields.
const (
	DefaultMaxRequestBytes = 1536 * 1024
	DefaultMaxTxnOps       = 128
)

// NewServer returns a gRPC server with the services cfg provides (KV,
// Watch, Maintenance, Lease, Cluster, Auth) and the "grpc.health.v1"
// health service (reporting SERVING) registered. The caller serves it (see
// server/httpapi.Serve) and stops it.
func NewServer(s Server, cfg Config) *grpc.Server {
	cfg = cfg.withDefaults()
	gs := grpc.NewServer(append(baseOptions(cfg), memberOptions(s, cfg)...)...)
	registerServices(gs, s, cfg)
	metrics.InitGRPCServer(gs)
	return gs
}

// withDefaults fills what the caller left zero with etcd's defaults.
func (cfg Config) withDefaults() Config {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.MaxRequestBytes == 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxTxnOps == 0 {
		cfg.MaxTxnOps = DefaultMaxTxnOps
	}
	if cfg.WarningUnaryRequestDuration <= 0 {
		cfg.WarningUnaryRequestDuration = DefaultWarningUnaryRequestDuration
	}
	return cfg
}

// baseOptions are the server options every member gets: transport limits,
// keepalive policy and the metrics, logging and error interceptors.
func baseOptions(cfg Config) []grpc.ServerOption {
	opts := []grpc.ServerOption{
		grpc.Creds(connTLSCreds{}),
		// Proto, plus watch responses encoded ahead (watch_encode.go).
		grpc.ForceServerCodecV2(newWatchCodec()),
		// Reuse warm goroutines for RPCs instead of a fresh one per stream,
		// whose stack would grow anew each time (copystack was ~8% of CPU
		// under a 100-client put load). A unary write holds its worker
		// while it waits for commit and fsync, so the pool must cover the
		// requests in flight, not the CPUs; an idle worker is a parked
		// goroutine.
		grpc.NumStreamWorkers(uint32(max(streamWorkers, runtime.GOMAXPROCS(0)))),
		grpc.MaxRecvMsgSize(int(min(cfg.MaxRequestBytes, math.MaxInt32-grpcOverheadBytes)) + grpcOverheadBytes),
		grpc.MaxSendMsgSize(math.MaxInt32),
		// The metrics interceptors come first (outermost), so they count
		// the status the client finally gets.
		grpc.ChainUnaryInterceptor(metrics.UnaryServerInterceptor, statsInterceptor(cfg.Logger, cfg.WarningUnaryRequestDuration), unaryErrorInterceptor),
		grpc.ChainStreamInterceptor(metrics.StreamServerInterceptor, streamErrorInterceptor),
	}
	if cfg.KeepAliveMinTime > 0 {
		opts = append(opts, grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: cfg.KeepAliveMinTime, PermitWithoutStream: false}))
	}
	if cfg.KeepAliveInterval > 0 && cfg.KeepAliveTimeout > 0 {
		opts = append(opts, grpc.KeepaliveParams(keepalive.ServerParameters{Time: cfg.KeepAliveInterval, Timeout: cfg.KeepAliveTimeout}))
	}
	if cfg.MaxConcurrentStreams > 0 {
		opts = append(opts, grpc.MaxConcurrentStreams(cfg.MaxConcurrentStreams))
	}
	return opts
}

// memberOptions are the interceptors of what the member can tell: learner
// refusals, require-leader, and auth. The unary checks run in one
// interceptor (see checkedUnary).
func memberOptions(s Server, cfg Config) []grpc.ServerOption {
	var checks []unaryCheck
	var streams []grpc.StreamServerInterceptor
	if lc, ok := s.(LearnerChecker); ok {
		checks = append(checks, learnerUnaryCheck(lc))
		streams = append(streams, learnerStreamInterceptor(lc))
	}
	if lr, ok := s.(LeaderReporter); ok {
		checks = append(checks, leaderUnaryCheck(lr))
		streams = append(streams, leaderStreamInterceptor(lr, cfg.ElectionTimeout))
	}
	if ag, ok := s.(AuthGate); ok {
		checks = append(checks, authUnaryCheck(ag))
		streams = append(streams, authStreamInterceptor(ag))
	}
	var opts []grpc.ServerOption
	if len(checks) > 0 {
		opts = append(opts, grpc.ChainUnaryInterceptor(checkedUnary(checks)))
	}
	if len(streams) > 0 {
		opts = append(opts, grpc.ChainStreamInterceptor(streams...))
	}
	return opts
}

// unaryCheck refuses a unary request before its handler runs (an error)
// or lets it through (nil).
type unaryCheck func(ctx context.Context, req any) error

// checkedUnary runs checks in order and the handler if all pass. One
// interceptor for all of them: gRPC's chain allocates a closure per
// interceptor and request.
func checkedUnary(checks []unaryCheck) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		for _, check := range checks {
			if err := check(ctx, req); err != nil {
				return nil, err
			}
		}
		return handler(ctx, req)
	}
}

// registerServices registers health always, and the services cfg
// provides.
func registerServices(gs *grpc.Server, s Server, cfg Config) {
	if cfg.KV != nil {
		pb.RegisterKVServer(gs, newKVServer(s, cfg.KV, int(min(cfg.MaxTxnOps, math.MaxInt32)), int(min(cfg.MaxRequestBytes, math.MaxInt32))))
	}
	hs := health.NewServer()
	hn := newHealthNotifier(hs, cfg.Logger, cfg.StopGRPCServiceOnDefrag)
	if cfg.Maintenance != nil {
		pb.RegisterMaintenanceServer(gs, newMaintenanceServer(s, cfg.Maintenance, cfg.Logger, hn))
		if w, ok := cfg.Maintenance.(autoDefragWatchable); ok {
			w.WatchAutoDefrags(hn)
		}
	}
	if cfg.Lease != nil {
		pb.RegisterLeaseServer(gs, &leaseServer{s: s, ls: cfg.Lease})
	}
	if cfg.Cluster != nil {
		pb.RegisterClusterServer(gs, &clusterServer{s: s, cs: cfg.Cluster})
	}
	if cfg.Watch != nil {
		pb.RegisterWatchServer(gs, newWatchServer(s, cfg.Watch, cfg, cfg.Logger))
	}
	if cfg.Auth != nil {
		pb.RegisterAuthServer(gs, &authServer{s: s, as: cfg.Auth})
	}
	healthpb.RegisterHealthServer(gs, hs)
}
