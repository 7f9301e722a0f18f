package config

import (
	"math"
	"net/url"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Cluster states accepted by --initial-cluster-state.
const (
	ClusterStateNew      = "new"
	ClusterStateExisting = "existing"
)

// Defaults that other packages need to resolve "0 means default" settings.
const (
	DefaultName                 = "default"
	DefaultSnapshotCount        = 10000
	DefaultSnapshotCatchUp      = 5000
	DefaultMaxTxnOps            = 128
	DefaultMaxRequestBytes      = 1572864
	DefaultMaxSnapshots         = 5
	DefaultMaxWALs              = 5
	DefaultQuotaBackendBytes    = 2 * 1024 * 1024 * 1024
	DefaultBackendBatchInterval = 100 * time.Millisecond
	DefaultBackendBatchLimit    = 10000
	DefaultListenPeerURL        = "http://localhost:2380"
	DefaultListenClientURL      = "http://localhost:2379"
	DefaultLogOutput            = "default"
	maxElectionMs               = 50000
	// MinRaftConnTimeout is the default and the least value of
	// --raft-read-timeout and --raft-write-timeout.
	MinRaftConnTimeout = 5 * time.Second
)

// TLSInfo holds one side's (client or peer) transport security settings.
type TLSInfo struct {
	CertFile            string   `json:"cert-file"`
	KeyFile             string   `json:"key-file"`
	ClientCertFile      string   `json:"client-cert-file"`
	ClientKeyFile       string   `json:"client-key-file"`
	ClientCertAuth      bool     `json:"client-cert-auth"`
	TrustedCAFile       string   `json:"trusted-ca-file"`
	AllowedCNs          []string `json:"allowed-cn"`
	AllowedHostnames    []string `json:"allowed-hostname"`
	SkipClientSANVerify bool     `json:"skip-client-san-verification,omitempty"`
	// CRLFile has no YAML key in etcd: it is set by flag only.
	CRLFile string `json:"-"`
}

// DiscoverySecure is the v3 discovery client's transport security.
type DiscoverySecure struct {
	Cert               string `json:"cert"`
	Key                string `json:"key"`
	Cacert             string `json:"cacert"`
	InsecureTransport  bool   `json:"insecure-transport"`
	InsecureSkipVerify bool   `json:"insecure-skip-tls-verify"`
}

// DiscoveryAuth is the v3 discovery client's credentials.
type DiscoveryAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// DiscoveryClient mirrors the "client" object of etcd's discovery-config.
type DiscoveryClient struct {
	Endpoints        []string        `json:"endpoints"`
	RequestTimeout   time.Duration   `json:"request-timeout"`
	DialTimeout      time.Duration   `json:"dial-timeout"`
	KeepAliveTime    time.Duration   `json:"keepalive-time"`
	KeepAliveTimeout time.Duration   `json:"keepalive-timeout"`
	Secure           DiscoverySecure `json:"secure"`
	Auth             DiscoveryAuth   `json:"auth"`
}

// DiscoveryConfig is etcd's v3 discovery configuration.
type DiscoveryConfig struct {
	Client DiscoveryClient `json:"client"`
	Token  string          `json:"token"`
}

// SocketOpts are listener socket options.
type SocketOpts struct {
	ReusePort    bool `json:"reuse-port"`
	ReuseAddress bool `json:"reuse-address"`
}

// Notice is a message Parse wants logged once the caller has a logger, in
// etcd's words and fields (for example "recognized and used environment
// variable").
type Notice struct {
	Level   zapcore.Level
	Message string
	Fields  []zap.Field
}

// Config is the server configuration. Field names follow etcd's
// embed.Config; json tags are etcd's --config-file YAML keys. Fields for
// flags cairn does not implement yet exist so that they can be parsed and
// rejected (see checkUnsupported).
type Config struct {
	// Member.
	Name                       string        `json:"name"`
	Dir                        string        `json:"data-dir"`
	WalDir                     string        `json:"wal-dir"`
	SnapshotCount              uint64        `json:"snapshot-count"`
	SnapshotCatchUpEntries     uint64        `json:"snapshot-catchup-entries"`
	MaxSnapFiles               uint          `json:"max-snapshots"`
	MaxWalFiles                uint          `json:"max-wals"`
	TickMs                     uint          `json:"heartbeat-interval"`
	ElectionMs                 uint          `json:"election-timeout"`
	InitialElectionTickAdvance bool          `json:"initial-election-tick-advance"`
	BackendBatchInterval       time.Duration `json:"backend-batch-interval"`
	BackendBatchLimit          int           `json:"backend-batch-limit"`
	BackendFreelistType        string        `json:"backend-bbolt-freelist-type"`
	QuotaBackendBytes          int64         `json:"quota-backend-bytes"`
	MaxTxnOps                  uint          `json:"max-txn-ops"`
	MaxRequestBytes            uint          `json:"max-request-bytes"`
	MaxConcurrentStreams       uint32        `json:"max-concurrent-streams"`
	GRPCKeepAliveMinTime       time.Duration `json:"grpc-keepalive-min-time"`
	GRPCKeepAliveInterval      time.Duration `json:"grpc-keepalive-interval"`
	GRPCKeepAliveTimeout       time.Duration `json:"grpc-keepalive-timeout"`
	SocketOpts                 SocketOpts    `json:"socket-options"`
	// Raft connection timeouts are flags only in etcd (no YAML key).
	RaftReadTimeout  time.Duration `json:"-"`
	RaftWriteTimeout time.Duration `json:"-"`

	// URLs. In YAML they are comma-separated strings (see fileConfig).
	ListenPeerUrls       []url.URL `json:"-"`
	ListenClientUrls     []url.URL `json:"-"`
	ListenClientHttpUrls []url.URL `json:"-"` //nolint:revive // etcd's name
	ListenMetricsUrls    []url.URL `json:"-"`
	AdvertisePeerUrls    []url.URL `json:"-"`
	AdvertiseClientUrls  []url.URL `json:"-"`

	// Clustering.
	ClusterState            string          `json:"initial-cluster-state"`
	InitialCluster          string          `json:"initial-cluster"`
	InitialClusterToken     string          `json:"initial-cluster-token"`
	StrictReconfigCheck     bool            `json:"strict-reconfig-check"`
	PreVote                 bool            `json:"pre-vote"`
	DNSCluster              string          `json:"discovery-srv"`
	DNSClusterServiceName   string          `json:"discovery-srv-name"`
	DiscoveryCfg            DiscoveryConfig `json:"discovery-config"`
	DiscoveryFallback       string          `json:"-"`
	V2Deprecation           string          `json:"v2-deprecation"`
	AutoCompactionMode      string          `json:"auto-compaction-mode"`
	AutoCompactionRetention string          `json:"auto-compaction-retention"`

	// Security.
	ClientTLSInfo          TLSInfo  `json:"-"`
	PeerTLSInfo            TLSInfo  `json:"-"`
	ClientAutoTLS          bool     `json:"-"`
	PeerAutoTLS            bool     `json:"-"`
	SelfSignedCertValidity uint     `json:"self-signed-cert-validity"`
	CipherSuites           []string `json:"cipher-suites"`
	TlsMinVersion          string   `json:"tls-min-version"` //nolint:revive // etcd's name
	TlsMaxVersion          string   `json:"tls-max-version"` //nolint:revive // etcd's name
	CORS                   []string `json:"-"`
	HostWhitelist          []string `json:"-"`

	// Auth.
	AuthToken    string `json:"auth-token"`
	BcryptCost   uint   `json:"bcrypt-cost"`
	AuthTokenTTL uint   `json:"auth-token-ttl"`

	// Profiling, monitoring and tracing.
	EnablePprof                              bool   `json:"enable-pprof"`
	Metrics                                  string `json:"metrics"`
	EnableDistributedTracing                 bool   `json:"enable-distributed-tracing"`
	DistributedTracingAddress                string `json:"distributed-tracing-address"`
	DistributedTracingServiceName            string `json:"distributed-tracing-service-name"`
	DistributedTracingServiceInstanceID      string `json:"distributed-tracing-instance-id"`
	DistributedTracingSamplingRatePerMillion int    `json:"distributed-tracing-sampling-rate"`

	// Logging.
	Logger                string   `json:"logger"`
	LogLevel              string   `json:"log-level"`
	LogFormat             string   `json:"log-format"`
	LogOutputs            []string `json:"log-outputs"`
	EnableLogRotation     bool     `json:"enable-log-rotation"`
	LogRotationConfigJSON string   `json:"log-rotation-config-json"`

	// Server tuning and checks.
	EnableGRPCGateway                 bool          `json:"enable-grpc-gateway"`
	CorruptCheckTime                  time.Duration `json:"corrupt-check-time"`
	CompactHashCheckTime              time.Duration `json:"compact-hash-check-time"`
	CompactionBatchLimit              int           `json:"compaction-batch-limit"`
	CompactionSleepInterval           time.Duration `json:"compaction-sleep-interval"`
	WatchProgressNotifyInterval       time.Duration `json:"watch-progress-notify-interval"`
	DowngradeCheckTime                time.Duration `json:"downgrade-check-time"`
	WarningApplyDuration              time.Duration `json:"warning-apply-duration"`
	WarningUnaryRequestDuration       time.Duration `json:"warning-unary-request-duration"`
	MemoryMlock                       bool          `json:"memory-mlock"`
	BootstrapDefragThresholdMegabytes uint          `json:"bootstrap-defrag-threshold-megabytes"`
	MaxLearners                       int           `json:"max-learners"`

	// cairn extensions (learners; see server/etcdserver/learner_auto.go).
	LearnerAutoPromote      bool          `json:"experimental-learner-auto-promote"`
	LearnerAutoPromoteAfter time.Duration `json:"experimental-learner-auto-promote-after"`
	LearnerNoAutoPromote    bool          `json:"experimental-learner-no-auto-promote"`
	MemberAddAsLearner      bool          `json:"experimental-member-add-as-learner"`
	LearnerReadOnly         bool          `json:"experimental-learner-read-only"`
	StandbyFailoverAfter    time.Duration `json:"experimental-learner-standby-failover-after"`
	// cairn extension: how often the leader checkpoints remaining lease
	// TTLs (etcd: 5 minutes, not configurable).
	LeaseCheckpointInterval time.Duration `json:"experimental-lease-checkpoint-interval"`
	// cairn extension: automatic space reclamation (online defrag when the
	// free share of the db file is large; see server/etcdserver/autodefrag.go).
	AutoDefragFreePercent      uint          `json:"experimental-auto-defrag-free-percent"`
	AutoDefragMinFreeMegabytes uint          `json:"experimental-auto-defrag-min-free-megabytes"`
	AutoDefragInterval         time.Duration `json:"experimental-auto-defrag-interval"`
	// cairn extension: the key index checkpoint written on a clean stop
	// (see server/storage/mvcc/checkpoint.go).
	IndexCheckpoint bool `json:"experimental-index-checkpoint"`

	// cairn extension: the web dashboard under /ui/ (server/dashboard).
	Dashboard bool `json:"experimental-dashboard"`

	// Unsafe.
	UnsafeNoFsync   bool `json:"unsafe-no-fsync"`
	ForceNewCluster bool `json:"force-new-cluster"`

	// FeatureGates holds the gates set explicitly, by name; a gate not in
	// the map has its default (see featureGateDefaults).
	FeatureGates map[string]bool `json:"-"`

	// Invocation.
	ConfigFile   string `json:"-"`
	PrintVersion bool   `json:"-"`
	PrintHelp    bool   `json:"-"`

	// Notices are messages for the caller to log (see Notice).
	Notices []Notice `json:"-"`
}

// NewConfig returns a Config holding etcd v3.7's defaults.
func NewConfig() *Config {
	c := &Config{
		Name:                       DefaultName,
		SnapshotCount:              DefaultSnapshotCount,
		SnapshotCatchUpEntries:     DefaultSnapshotCatchUp,
		MaxSnapFiles:               DefaultMaxSnapshots,
		MaxWalFiles:                DefaultMaxWALs,
		TickMs:                     100,
		ElectionMs:                 1000,
		InitialElectionTickAdvance: true,
		BackendBatchInterval:       DefaultBackendBatchInterval,
		BackendBatchLimit:          DefaultBackendBatchLimit,
		MaxTxnOps:                  DefaultMaxTxnOps,
		MaxRequestBytes:            DefaultMaxRequestBytes,
		MaxConcurrentStreams:       math.MaxUint32,
		GRPCKeepAliveMinTime:       5 * time.Second,
		GRPCKeepAliveInterval:      2 * time.Hour,
		GRPCKeepAliveTimeout:       20 * time.Second,
		RaftReadTimeout:            MinRaftConnTimeout,
		RaftWriteTimeout:           MinRaftConnTimeout,

		ListenPeerUrls:      mustURLs(DefaultListenPeerURL),
		ListenClientUrls:    mustURLs(DefaultListenClientURL),
		AdvertisePeerUrls:   mustURLs(DefaultListenPeerURL),
		AdvertiseClientUrls: mustURLs(DefaultListenClientURL),

		ClusterState:            ClusterStateNew,
		InitialClusterToken:     "etcd-cluster",
		StrictReconfigCheck:     true,
		PreVote:                 true,
		DiscoveryCfg:            defaultDiscovery(),
		DiscoveryFallback:       "exit",
		V2Deprecation:           "write-only",
		AutoCompactionMode:      "periodic",
		AutoCompactionRetention: "0",

		SelfSignedCertValidity: 1,
		TlsMinVersion:          "TLS1.2",
		CORS:                   []string{"*"},
		HostWhitelist:          []string{"*"},

		AuthToken:    "simple",
		BcryptCost:   10,
		AuthTokenTTL: 300,

		Metrics:                       "basic",
		DistributedTracingAddress:     "localhost:4317",
		DistributedTracingServiceName: "etcd",

		Logger:                "zap",
		LogLevel:              "info",
		LogFormat:             "json",
		LogOutputs:            []string{DefaultLogOutput},
		LogRotationConfigJSON: `{"maxsize": 100, "maxage": 0, "maxbackups": 0, "localtime": false, "compress": false}`,

		EnableGRPCGateway:           true,
		CompactHashCheckTime:        time.Minute,
		DowngradeCheckTime:          5 * time.Second,
		WarningApplyDuration:        100 * time.Millisecond,
		WarningUnaryRequestDuration: 300 * time.Millisecond,
		MaxLearners:                 1,
		LearnerAutoPromoteAfter:     30 * time.Second,
		LeaseCheckpointInterval:     5 * time.Minute,
		AutoDefragFreePercent:       50,
		AutoDefragMinFreeMegabytes:  100,
		AutoDefragInterval:          10 * time.Minute,
		IndexCheckpoint:             true,
		FeatureGates:                map[string]bool{},
	}
	c.InitialCluster = c.InitialClusterFromName(c.Name)
	return c
}

func defaultDiscovery() DiscoveryConfig {
	return DiscoveryConfig{Client: DiscoveryClient{
		RequestTimeout:   5 * time.Second,
		DialTimeout:      2 * time.Second,
		KeepAliveTime:    2 * time.Second,
		KeepAliveTimeout: 6 * time.Second,
		Secure:           DiscoverySecure{InsecureTransport: true},
	}}
}

// InitialClusterFromName builds "name=url,name=url" from the advertise peer
// URLs, as etcd does when --initial-cluster is not given.
func (c *Config) InitialClusterFromName(name string) string {
	if name == "" {
		name = DefaultName
	}
	s := ""
	for i, u := range c.AdvertisePeerUrls {
		if i > 0 {
			s += ","
		}
		s += name + "=" + u.String()
	}
	return s
}

// InitialClusterMap parses InitialCluster into member name => peer URLs.
func (c *Config) InitialClusterMap() (map[string][]url.URL, error) {
	return parseURLsMap(c.InitialCluster)
}

// IsNewCluster reports whether the member bootstraps a new cluster.
func (c *Config) IsNewCluster() bool { return c.ClusterState == ClusterStateNew }

// ElectionTicks is the election timeout counted in heartbeat ticks.
func (c *Config) ElectionTicks() int { return int(c.ElectionMs / c.TickMs) }

// EffectiveQuotaBackendBytes resolves the "0 means 2 GiB" default.
func (c *Config) EffectiveQuotaBackendBytes() int64 {
	if c.QuotaBackendBytes <= 0 {
		return DefaultQuotaBackendBytes
	}
	return c.QuotaBackendBytes
}

func (c *Config) notice(level zapcore.Level, msg string, fields ...zap.Field) {
	c.Notices = append(c.Notices, Notice{Level: level, Message: msg, Fields: fields})
}

// LogNotices writes the notices collected by Parse to lg.
func (c *Config) LogNotices(lg *zap.Logger) {
	for _, n := range c.Notices {
		if ce := lg.Check(n.Level, n.Message); ce != nil {
			ce.Write(n.Fields...)
		}
	}
}
