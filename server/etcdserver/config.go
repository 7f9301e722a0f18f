package etcdserver

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/defaults"
	"github.com/cairnkv/cairn/server/peer"
	"github.com/cairnkv/cairn/server/wal"
)

// Config is what a member needs to start. server/config turns flags into it.
type Config struct {
	Name                string
	DataDir             string
	WALDir              string // defaults to <data-dir>/member/wal
	ClientURLs          []string
	PeerURLs            []string
	InitialCluster      map[string][]string // name -> peer URLs
	InitialClusterToken string
	NewCluster          bool
	// ForceNewCluster (--force-new-cluster): on restart, remove every other
	// member and carry on as a one-member cluster (force_new_cluster.go).
	ForceNewCluster bool

	TickMs        uint
	ElectionTicks int

	// VersionMonitorInterval is how often the leader reconsiders the
	// cluster version (0: etcd's 4 s; tests shorten it).
	VersionMonitorInterval time.Duration
	// CompactionBatchLimit and CompactionSleepInterval tune compaction
	// rounds (--compaction-batch-limit, --compaction-sleep-interval; 0:
	// etcd's defaults).
	CompactionBatchLimit    int
	CompactionSleepInterval time.Duration
	// FastLeaseKeepAlive (feature gate, on by default in etcd v3.7): the
	// leader renews a lease it knows without waiting for its applied
	// index to reach the committed one.
	FastLeaseKeepAlive bool
	// WarningApplyDuration (--warning-apply-duration) is how long an apply
	// may take before it is logged and counted as slow (0: etcd's 100ms).
	WarningApplyDuration time.Duration
	// PriorityRequests (PriorityRequest feature gate) lets LeaseRevoke
	// through a longer apply backlog than other requests.
	PriorityRequests bool
	// PeerLocalAddr is the IP connections to peers leave from
	// (SetMemberLocalAddr feature gate); "": the system's choice.
	PeerLocalAddr string
	// DowngradeCheckTime (--downgrade-check-time) is how often the leader
	// checks whether an enabled downgrade has finished (0: never).
	DowngradeCheckTime time.Duration

	PreVote                bool
	SnapshotCount          uint64
	SnapshotCatchUpEntries uint64
	MaxSnapFiles           uint
	MaxWALFiles            uint

	// ClientCertAuth: with auth on, a request without a token is made by
	// the user named by its client certificate's common name.
	ClientCertAuth bool

	StrictReconfigCheck bool
	MaxLearners         int

	// Learner extensions of cairn (see learner_auto.go and README):
	// --experimental-learner-auto-promote, --experimental-learner-auto-promote-after,
	// --experimental-learner-no-auto-promote, --experimental-member-add-as-learner
	// and --experimental-learner-read-only.
	LearnerAutoPromote      bool
	LearnerAutoPromoteAfter time.Duration // 0 = 30s
	LearnerNoAutoPromote    bool
	MemberAddAsLearner      bool
	LearnerReadOnly         bool
	StandbyFailoverAfter    time.Duration // --experimental-learner-standby-failover-after; 0 = off

	// LeaseCheckpoint (feature gate LeaseCheckpoint; cairn's default is on)
	// makes the leader checkpoint remaining lease TTLs through raft every
	// LeaseCheckpointInterval (--experimental-lease-checkpoint-interval;
	// 0 = 5 min, etcd's), so a leader change does not restart a lease at
	// its full TTL. Applied checkpoints are always stored in the lease
	// bucket (etcd's LeaseCheckpointPersist, always on from v3.6).
	LeaseCheckpoint         bool
	LeaseCheckpointInterval time.Duration

	// Corruption detection (corrupt.go). InitialCorruptCheck (feature gate
	// InitialCorruptCheck) makes CheckInitialHashKV compare hashes with the
	// peers; CorruptCheckTime (--corrupt-check-time, 0 = off) is the
	// leader's periodic check; CompactHashCheck (feature gate
	// CompactHashCheck) turns on the leader's compaction hash check every
	// CompactHashCheckTime (--compact-hash-check-time; 0 = 1 min).
	InitialCorruptCheck  bool
	CorruptCheckTime     time.Duration
	CompactHashCheck     bool
	CompactHashCheckTime time.Duration

	QuotaBackendBytes    int64
	MaxRequestBytes      uint
	BackendBatchInterval time.Duration
	BackendBatchLimit    int
	UnsafeNoFsync        bool
	// MemoryMlock (--memory-mlock) locks the backend's pages in RAM.
	MemoryMlock bool
	// BootstrapDefragThresholdMegabytes (--bootstrap-defrag-threshold-megabytes):
	// at start, defragment the backend if that frees at least this many
	// MiB; 0 never does (see bootstrap_defrag.go).
	BootstrapDefragThresholdMegabytes uint

	// Automatic reclamation, a cairn extension (autodefrag.go): an online
	// defrag once AutoDefragFreePercent of the db file (0 = never, etcd's
	// behaviour) and at least AutoDefragMinFreeBytes are free, at most once
	// per AutoDefragInterval, each member in its own share of it.
	AutoDefragFreePercent  uint
	AutoDefragMinFreeBytes int64
	AutoDefragInterval     time.Duration

	// IndexCheckpoint, a cairn extension (index_checkpoint.go): on a clean
	// stop, write the key index next to the db so the next start need not
	// rebuild it from the key bucket.
	IndexCheckpoint bool

	// AutoCompactionMode and AutoCompactionRetention (parsed by
	// compactor.ParseRetention; 0 is off) configure auto compaction (see
	// autocompact.go).
	AutoCompactionMode      string
	AutoCompactionRetention time.Duration

	// RaftReadTimeout and RaftWriteTimeout (--raft-read-timeout,
	// --raft-write-timeout) bound idle raft message streams; 0 means 5s.
	RaftReadTimeout, RaftWriteTimeout time.Duration

	// AuthToken is --auth-token ("simple", "jwt,..."; "" issues no tokens),
	// BcryptCost --bcrypt-cost, AuthTokenTTL --auth-token-ttl in seconds.
	AuthToken    string
	BcryptCost   uint
	AuthTokenTTL uint

	// PeerTLS is the client side of TLS for https:// peer URLs: the raft
	// transport and the member's other requests to peers use it.
	PeerTLS *tls.Config

	Logger *zap.Logger

	peerHTTP *http.Client // set by withDefaults (see newPeerHTTPClient)
}

// peerIdleConnsPerHost bounds the idle connections kept to each peer for
// requests between members (lease forwarding above all).
const peerIdleConnsPerHost = 1024

// newPeerHTTPClient returns the client for one-off requests to other
// members' peer URLs (the member list when joining, lease and promote
// forwarding).
func (c *Config) newPeerHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Every keepalive a follower receives is one request to the leader, so
	// under load many are in flight at once. Go's default keeps only two
	// idle connections per host: the rest were dialed for one request and
	// closed after it. etcd's peer round tripper keeps up to 1024.
	tr.MaxIdleConnsPerHost = peerIdleConnsPerHost
	if c.PeerTLS != nil {
		tr.TLSClientConfig = c.PeerTLS.Clone()
	}
	if c.PeerLocalAddr != "" {
		tr.DialContext = peer.Dialer(30*time.Second, c.PeerLocalAddr).DialContext
	}
	return &http.Client{Transport: peer.NewHTTPTransport(tr)}
}

func (c *Config) memberDir() string { return filepath.Join(c.DataDir, "member") }
func (c *Config) snapDir() string   { return filepath.Join(c.memberDir(), "snap") }
func (c *Config) backendPath() string {
	return filepath.Join(c.snapDir(), "db")
}

// HasWAL reports whether the data dir already holds a WAL (a restart).
func (c *Config) HasWAL() bool { return wal.Exist(c.walDir()) }

func (c *Config) walDir() string {
	if c.WALDir != "" {
		return c.WALDir
	}
	return filepath.Join(c.memberDir(), "wal")
}

// requestTimeout bounds how long a proposal may wait, as etcd's
// ReqTimeout: 5s plus two election timeouts.
func (c *Config) requestTimeout() time.Duration {
	return 5*time.Second + 2*time.Duration(c.ElectionTicks)*time.Duration(c.TickMs)*time.Millisecond
}

func (c *Config) versionMonitorInterval() time.Duration {
	if c.VersionMonitorInterval > 0 {
		return c.VersionMonitorInterval
	}
	return monitorVersionInterval
}

func (c *Config) compactHashCheckTime() time.Duration {
	if c.CompactHashCheckTime > 0 {
		return c.CompactHashCheckTime
	}
	return time.Minute
}

func (c *Config) tickInterval() time.Duration { return time.Duration(c.TickMs) * time.Millisecond }

func (c *Config) withDefaults() (*Config, error) {
	cc := *c
	cc.peerHTTP = cc.newPeerHTTPClient()
	if cc.Logger == nil {
		cc.Logger = zap.NewNop()
	}
	if cc.TickMs == 0 {
		cc.TickMs = 100
	}
	if cc.ElectionTicks == 0 {
		cc.ElectionTicks = 10
	}
	cc.WarningApplyDuration = defaults.Positive(cc.WarningApplyDuration, 100*time.Millisecond)
	if cc.SnapshotCount == 0 {
		cc.SnapshotCount = 10000
	}
	if cc.SnapshotCatchUpEntries == 0 {
		cc.SnapshotCatchUpEntries = 5000
	}
	if cc.MaxRequestBytes == 0 {
		cc.MaxRequestBytes = 1572864
	}
	if cc.BackendBatchInterval == 0 {
		cc.BackendBatchInterval = 100 * time.Millisecond
	}
	if cc.BackendBatchLimit == 0 {
		cc.BackendBatchLimit = 10000
	}
	if cc.MaxLearners == 0 {
		cc.MaxLearners = 1
	}
	if cc.InitialClusterToken == "" {
		cc.InitialClusterToken = "etcd-cluster"
	}
	if _, ok := cc.InitialCluster[cc.Name]; !ok && cc.NewCluster {
		return nil, fmt.Errorf("couldn't find local name %q in the initial cluster configuration", cc.Name)
	}
	return &cc, nil
}
