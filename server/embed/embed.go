// Package embed starts a whole member from a parsed configuration: it builds
// the logger, opens the member (server/etcdserver), binds the client and peer
// listeners and serves gRPC and HTTP on every client URL. cmd/cairn is a thin
// main around it; tests can start members in-process with it.
package embed

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/url"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/pkg/failpoint"
	"github.com/cairnkv/cairn/server/config"
	"github.com/cairnkv/cairn/server/dashboard"
	"github.com/cairnkv/cairn/server/etcdserver"
	"github.com/cairnkv/cairn/server/httpapi"
	"github.com/cairnkv/cairn/server/v3rpc"
)

// The gRPC and HTTP layers find some of a member's abilities by a type
// assertion at run time; these make losing one a compile error instead.
var (
	_ v3rpc.LearnerChecker            = (*etcdserver.Server)(nil)
	_ v3rpc.ReadOnlyLearnerChecker    = (*etcdserver.Server)(nil)
	_ v3rpc.LeaderReporter            = (*etcdserver.Server)(nil)
	_ v3rpc.AuthGate                  = (*etcdserver.Server)(nil)
	_ v3rpc.WatchPermitter            = (*etcdserver.KVService)(nil)
	_ httpapi.SerializableReadChecker = (*etcdserver.Server)(nil)
	_ httpapi.LearnerReporter         = (*etcdserver.Server)(nil)
	_ httpapi.VersionReporter         = (*etcdserver.Server)(nil)
	_ httpapi.RaftStatusReporter      = (*etcdserver.Server)(nil)
)

// Member is a started member with its listeners.
type Member struct {
	Server *etcdserver.Server
	lg     *zap.Logger
	grpc   *grpc.Server
	gw     *httpapi.Gateway
	dash   *dashboard.Dashboard // --experimental-dashboard
	self   *selfServices        // Lock and Election, when installed
	client []*httpapi.Mux       // --listen-client-urls and --listen-client-http-urls
	peer   []*http.Server
	extra  []*http.Server // --listen-metrics-urls
	errc   chan error
}

// Discoverer obtains the initial cluster ("name=url,...") of a member that
// bootstraps through v3 discovery (server/discovery.Bootstrap).
type Discoverer func(ctx context.Context, lg *zap.Logger, cfg *config.Config) (string, error)

// Extensions are the parts of a member built on cairn's Go client, which
// embed cannot import (client's tests start members with embed): v3
// discovery and the Lock and Election services. cmd/cairn passes both; a
// member started without them refuses --discovery-token and answers Lock
// and Election with Unimplemented, and says so in its log.
type Extensions struct {
	Discover       Discoverer
	ClientServices ClientServices
}

// usesV3Discovery reports whether --discovery-token and
// --discovery-endpoints are both set.
func usesV3Discovery(cfg *config.Config) bool {
	return cfg.DiscoveryCfg.Token != "" && len(cfg.DiscoveryCfg.Client.Endpoints) > 0
}

// StartMember opens a member without Extensions (as tests of the server
// alone do) and starts serving; see StartMemberWith.
func StartMember(cfg *config.Config, lg *zap.Logger) (*Member, error) {
	return StartMemberWith(cfg, lg, Extensions{})
}

// StartMemberWith opens the member with ext and starts serving. It returns
// once the listeners are bound; ReadyNotify says when requests are served.
func StartMemberWith(cfg *config.Config, lg *zap.Logger, ext Extensions) (*Member, error) {
	cfg, ecfg, err := resolveMemberConfig(cfg, lg, ext)
	if err != nil {
		return nil, err
	}
	sec, err := buildTLS(cfg, lg)
	if err != nil {
		return nil, err
	}
	ecfg.PeerTLS = sec.peerClient
	ecfg.PeerLocalAddr = cfg.InferLocalAddr(lg)
	ecfg.PriorityRequests = cfg.FeatureEnabled("PriorityRequest")
	ecfg.FastLeaseKeepAlive = cfg.FeatureEnabled("FastLeaseKeepAlive")
	ecfg.WarningApplyDuration = cfg.WarningApplyDuration
	var undo undoStack
	m, err := startMember(cfg, ecfg, sec, ext, lg, &undo)
	if err != nil {
		undo.run()
		return nil, err
	}
	go m.watch()
	go m.notifyWhenReady()
	return m, nil
}

// undoStack collects what a failed start must close again, in reverse.
type undoStack []func()

func (u *undoStack) push(f func()) { *u = append(*u, f) }

func (u undoStack) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// resolveMemberConfig settles the initial cluster (from DNS SRV records,
// or v3 discovery for a new cluster on an empty data dir; a restart
// trusts its WAL) and checks it, returning the member's configuration.
func resolveMemberConfig(cfg *config.Config, lg *zap.Logger, ext Extensions) (*config.Config, *etcdserver.Config, error) {
	if cfg.DNSCluster != "" {
		// --discovery-srv: read at every start, as etcd does.
		cluster, err := cfg.ClusterFromDNS(lg)
		if err != nil {
			return nil, nil, err
		}
		cfg = withInitialCluster(cfg, cluster)
	}
	ecfg, err := memberConfig(cfg, lg)
	if err != nil {
		return nil, nil, err
	}
	if usesV3Discovery(cfg) && cfg.IsNewCluster() && !ecfg.HasWAL() {
		if ext.Discover == nil {
			return nil, nil, errors.New("v3 discovery is not linked into this binary (embed.Extensions.Discover)")
		}
		cluster, err := ext.Discover(context.Background(), lg, cfg)
		if err != nil {
			return nil, nil, err
		}
		cfg = withInitialCluster(cfg, cluster)
		if ecfg, err = memberConfig(cfg, lg); err != nil {
			return nil, nil, err
		}
	}
	return cfg, ecfg, verifyInitialCluster(cfg, ecfg)
}

// withInitialCluster is a copy of cfg with another --initial-cluster.
func withInitialCluster(cfg *config.Config, cluster string) *config.Config {
	c := *cfg
	c.InitialCluster = cluster
	return &c
}

// memberListeners are the sockets a member serves on.
type memberListeners struct {
	client, peer []net.Listener
	extra        extraListeners
}

func listenMember(cfg *config.Config, sec *transportSecurity, lg *zap.Logger, undo *undoStack) (memberListeners, error) {
	var ls memberListeners
	lc := listenConfig(cfg.SocketOpts, lg)
	if err := checkClientHTTPURLs(cfg.ListenClientUrls, cfg.ListenClientHttpUrls); err != nil {
		return ls, err
	}
	var err error
	if ls.client, err = listenClientURLs(cfg.ListenClientUrls, sec.client, lc, lg); err != nil {
		return ls, err
	}
	undo.push(func() { closeAll(ls.client) })
	if ls.peer, err = listenAll(cfg.ListenPeerUrls, sec.peer, lc); err != nil {
		return ls, err
	}
	undo.push(func() { closeAll(ls.peer) })
	if ls.extra, err = listenExtra(cfg, sec.client, lc, lg); err != nil {
		return ls, err
	}
	undo.push(ls.extra.close)
	return ls, nil
}

// startMember binds the listeners, opens and starts the server, and serves
// gRPC, HTTP and the peer protocol; what it opened is on undo.
func startMember(cfg *config.Config, ecfg *etcdserver.Config, sec *transportSecurity, ext Extensions, lg *zap.Logger, undo *undoStack) (*Member, error) {
	ls, err := listenMember(cfg, sec, lg, undo)
	if err != nil {
		return nil, err
	}
	srv, err := etcdserver.New(ecfg)
	if err != nil {
		return nil, err
	}
	undo.push(srv.Stop)
	if ecfg.InitialCorruptCheck {
		// Before the member serves anything, as etcd: a member whose data
		// differs from its peers' must not answer a single request.
		if err := srv.CheckInitialHashKV(); err != nil {
			lg.Error("checkInitialHashKV failed", zap.Error(err))
			return nil, err
		}
	}
	m := &Member{Server: srv, lg: lg, errc: make(chan error, 1)}
	srv.Start()
	setupMetrics(cfg)
	if err := m.startGRPC(cfg, ext, undo); err != nil {
		return nil, err
	}
	handler, err := m.clientHTTP(cfg, sec)
	if err != nil {
		return nil, err
	}
	m.serve(ls, handler)
	return m, nil
}

// startGRPC builds the gRPC server with etcd's services and the client
// services of ext.
func (m *Member) startGRPC(cfg *config.Config, ext Extensions, undo *undoStack) error {
	if cfg.LogLevel == "debug" {
		// As etcd: gRPC traces RPCs for /debug/requests. gRPC wants this
		// set before its servers exist; it is process-wide and never unset.
		grpc.EnableTracing = true
	}
	m.grpc = v3rpc.NewServer(m.Server, v3rpc.Config{
		MaxRequestBytes: cfg.MaxRequestBytes, MaxTxnOps: cfg.MaxTxnOps,
		MaxConcurrentStreams: cfg.MaxConcurrentStreams, Logger: m.lg,
		KeepAliveMinTime: cfg.GRPCKeepAliveMinTime, KeepAliveInterval: cfg.GRPCKeepAliveInterval, KeepAliveTimeout: cfg.GRPCKeepAliveTimeout,
		WatchProgressNotifyInterval: cfg.WatchProgressNotifyInterval,
		ElectionTimeout:             time.Duration(cfg.ElectionMs) * time.Millisecond,
		StopGRPCServiceOnDefrag:     cfg.FeatureEnabled("StopGRPCServiceOnDefrag"),
		WarningUnaryRequestDuration: cfg.WarningUnaryRequestDuration,
		KV:                          m.Server.KV(),
		Watch:                       m.Server.KV(),
		Auth:                        m.Server.AuthAdmin(),
		Lease:                       m.Server.LeaseService(),
		Cluster:                     m.Server.MembershipAdmin(),
		Maintenance:                 m.Server.Maintenance(),
	})
	var err error
	if m.self, err = startClientServices(m.grpc, ext.ClientServices, m.lg); err != nil {
		m.grpc.Stop()
		return err
	}
	// The client services release what they hold after gRPC has stopped.
	undo.push(func() { m.grpc.Stop(); m.self.close() })
	return nil
}

// clientHTTP is the handler of the client URLs' HTTP side: health,
// version and metrics, the gateway and dashboard when enabled, the debug
// endpoints and failpoints, all behind etcd's access controller.
func (m *Member) clientHTTP(cfg *config.Config, sec *transportSecurity) (http.Handler, error) {
	srv, lg := m.Server, m.lg
	handler := httpapi.NewHandler(srv, lg)
	if cfg.EnableGRPCGateway {
		var err error
		if m.gw, err = httpapi.NewGateway(m.grpc); err != nil {
			return nil, err
		}
		handler = httpapi.WithGateway(m.gw, handler)
		if cfg.Dashboard {
			m.dash = dashboard.New(dashboard.Config{Local: m.gw.ClientConn(), Raft: srv, PeerTLS: sec.clientDial, Logger: lg})
			handler = dashboard.With(m.dash, handler)
			lg.Info("dashboard is enabled", zap.String("path", dashboard.Path))
		}
	}
	logDebug := cfg.LogLevel == "debug"
	if cfg.EnablePprof || logDebug {
		lg.Info("pprof is enabled", zap.String("path", "/debug/pprof"))
	}
	handler = debugEndpoints(handler, cfg.EnablePprof, logDebug)
	handler = failpoint.Mount(handler) // the handler itself without -tags failpoints
	return httpapi.WithAccessControl(httpapi.AccessConfig{
		CORS:          cfg.CORS,
		HostWhitelist: cfg.HostWhitelist,
		RejectGatewayCertCN: func() bool {
			return cfg.ClientTLSInfo.ClientCertAuth && cfg.EnableGRPCGateway && srv.AuthStore().IsAuthEnabled()
		},
	}, handler, lg), nil
}

// serve starts serving every listener: client URLs (gRPC, and HTTP unless
// --listen-client-http-urls takes it), peer URLs, and the extra URLs.
func (m *Member) serve(ls memberListeners, handler http.Handler) {
	clientHandler := handler
	if len(ls.extra.http) > 0 {
		clientHandler = nil // gRPC only: HTTP has its own URLs
	}
	for _, l := range ls.client {
		m.client = append(m.client, httpapi.Serve(l, m.grpc, clientHandler))
		m.lg.Info("serving client traffic", zap.String("address", l.Addr().String()))
	}
	for _, l := range ls.peer {
		m.peer = append(m.peer, servePeer(l, m.Server.PeerHandler(), m.lg))
	}
	m.serveExtra(ls.extra, handler)
}

// ReadyNotify is closed when the member serves client requests.
func (m *Member) ReadyNotify() <-chan struct{} { return m.Server.ReadyNotify() }

// Err reports a fatal error of the member.
func (m *Member) Err() <-chan error { return m.errc }

func (m *Member) watch() {
	select {
	case err := <-m.Server.Errors():
		m.errc <- err
	case <-m.Server.StopNotify():
	}
}

// Close stops serving and stops the member.
func (m *Member) Close() {
	// Hand leadership over while the peer connections are still up.
	m.Server.Maintenance().HandOverLeadership()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, mux := range m.client {
		if err := mux.Shutdown(ctx); err != nil {
			mux.Close()
		}
	}
	for _, hs := range m.extra {
		if err := hs.Shutdown(ctx); err != nil {
			hs.Close()
		}
	}
	m.grpc.Stop()
	m.self.close()
	if m.dash != nil {
		m.dash.Close()
	}
	if m.gw != nil {
		m.gw.Close()
	}
	m.Server.Stop()
	for _, p := range m.peer {
		p.Close()
	}
}

func memberConfig(cfg *config.Config, lg *zap.Logger) (*etcdserver.Config, error) {
	clusterMap, err := cfg.InitialClusterMap()
	if err != nil {
		return nil, err
	}
	retention, err := cfg.CompactionRetention()
	if err != nil {
		return nil, err
	}
	initial := make(map[string][]string, len(clusterMap))
	for name, urls := range clusterMap {
		initial[name] = urlStrings(urls)
	}
	return &etcdserver.Config{
		Name: cfg.Name, DataDir: cfg.Dir, WALDir: cfg.WalDir,
		ClientURLs: urlStrings(cfg.AdvertiseClientUrls), PeerURLs: urlStrings(cfg.AdvertisePeerUrls),
		InitialCluster: initial, InitialClusterToken: cfg.InitialClusterToken, NewCluster: cfg.IsNewCluster(), ForceNewCluster: cfg.ForceNewCluster,
		TickMs: cfg.TickMs, ElectionTicks: cfg.ElectionTicks(), PreVote: cfg.PreVote,
		StrictReconfigCheck: cfg.StrictReconfigCheck, ClientCertAuth: cfg.ClientTLSInfo.ClientCertAuth, MaxLearners: cfg.MaxLearners,
		DowngradeCheckTime:   cfg.DowngradeCheckTime,
		CompactionBatchLimit: cfg.CompactionBatchLimit, CompactionSleepInterval: cfg.CompactionSleepInterval,
		LearnerAutoPromote: cfg.LearnerAutoPromote, LearnerAutoPromoteAfter: cfg.LearnerAutoPromoteAfter, StandbyFailoverAfter: cfg.StandbyFailoverAfter,
		LearnerNoAutoPromote: cfg.LearnerNoAutoPromote, MemberAddAsLearner: cfg.MemberAddAsLearner, LearnerReadOnly: cfg.LearnerReadOnly,
		LeaseCheckpoint: cfg.FeatureEnabled("LeaseCheckpoint"), LeaseCheckpointInterval: cfg.LeaseCheckpointInterval,
		InitialCorruptCheck: cfg.FeatureEnabled("InitialCorruptCheck"), CorruptCheckTime: cfg.CorruptCheckTime,
		CompactHashCheck: cfg.FeatureEnabled("CompactHashCheck"), CompactHashCheckTime: cfg.CompactHashCheckTime,
		SnapshotCount: cfg.SnapshotCount, SnapshotCatchUpEntries: cfg.SnapshotCatchUpEntries,
		MaxSnapFiles: cfg.MaxSnapFiles, MaxWALFiles: cfg.MaxWalFiles,
		QuotaBackendBytes: cfg.QuotaBackendBytes, MaxRequestBytes: cfg.MaxRequestBytes,
		BackendBatchInterval: cfg.BackendBatchInterval, BackendBatchLimit: cfg.BackendBatchLimit,
		UnsafeNoFsync: cfg.UnsafeNoFsync, Logger: lg,
		MemoryMlock: cfg.MemoryMlock, BootstrapDefragThresholdMegabytes: cfg.BootstrapDefragThresholdMegabytes,
		AutoDefragFreePercent: cfg.AutoDefragFreePercent, AutoDefragMinFreeBytes: int64(cfg.AutoDefragMinFreeMegabytes) << 20, AutoDefragInterval: cfg.AutoDefragInterval,
		IndexCheckpoint:    cfg.IndexCheckpoint,
		AutoCompactionMode: cfg.AutoCompactionMode, AutoCompactionRetention: retention,
		RaftReadTimeout: cfg.RaftReadTimeout, RaftWriteTimeout: cfg.RaftWriteTimeout,
		AuthToken: cfg.AuthToken, BcryptCost: cfg.BcryptCost, AuthTokenTTL: cfg.AuthTokenTTL,
	}, nil
}

// verifyInitialCluster checks --initial-cluster only when the data dir is
// empty: etcd ignores it on restart, because the WAL then holds the truth.
func verifyInitialCluster(cfg *config.Config, ecfg *etcdserver.Config) error {
	if ecfg.HasWAL() {
		return nil
	}
	if cfg.IsNewCluster() {
		return cfg.VerifyBootstrap()
	}
	return cfg.VerifyJoinExisting()
}

func urlStrings(us []url.URL) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.String()
	}
	return out
}

// listenAll binds every URL (see listen).
func listenAll(urls []url.URL, tlsCfg *tls.Config, lc *net.ListenConfig) ([]net.Listener, error) {
	var lns []net.Listener
	for _, u := range urls {
		l, err := listen(u, tlsCfg, lc)
		if err != nil {
			closeAll(lns)
			return nil, err
		}
		lns = append(lns, l)
	}
	return lns, nil
}

func closeAll(lns []net.Listener) {
	for _, l := range lns {
		l.Close()
	}
}

// servePeer serves the member's peer endpoints (raft traffic, /members,
// /version) on a peer listener.
func servePeer(l net.Listener, h http.Handler, lg *zap.Logger) *http.Server {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: zap.NewStdLog(lg.Named("peer-http"))}
	go func() {
		if err := hs.Serve(l); err != nil && err != http.ErrServerClosed {
			lg.Warn("peer listener stopped", zap.String("address", l.Addr().String()), zap.Error(err))
		}
	}()
	lg.Info("serving peer traffic", zap.String("address", l.Addr().String()))
	return hs
}
